package ctl

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/onceflow/onceflow/pkg/cases"
)

func casesCmd(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "cases",
		Short: "Cases: money that needs a person (list, show, resolve)",
	}
	c.AddCommand(casesList(o), casesShow(o), casesResolve(o))
	return c
}

func casesList(o *options) *cobra.Command {
	var status, kind, service string
	var limit int
	c := &cobra.Command{
		Use:   "list",
		Short: "Cases of every service, oldest first (open ones unless --status)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 1000 {
				return &Error{ExitUsage, fmt.Errorf("--limit: want 1 to 1000, got %d", limit)}
			}
			q := url.Values{"status": {status}, "limit": {strconv.Itoa(limit)}}
			if kind != "" {
				q.Set("kind", kind)
			}
			if service != "" {
				q.Set("service", service)
			}
			var page struct {
				Cases []cases.View `json:"cases"`
			}
			raw, err := o.client("reconciler").call(cmd.Context(), http.MethodGet, "/admin/cases?"+q.Encode(), nil, &page)
			if err != nil {
				return err
			}
			rows := make([][]any, len(page.Cases))
			for i, k := range page.Cases {
				rows[i] = []any{k.ID, k.Kind, k.Subject, money(k), k.OpenedAt, state(k)}
			}
			return o.print(raw, "ID\tKIND\tSUBJECT\tAMOUNT\tOPENED\tSTATE", rows)
		},
	}
	c.Flags().StringVar(&status, "status", "open", "open, closed or all")
	c.Flags().StringVar(&kind, "kind", "", "only cases of this kind, e.g. missing_document")
	c.Flags().StringVar(&service, "service", "", "only cases of ingest, invoicer, reconciler or relay")
	c.Flags().IntVar(&limit, "limit", 100, "cases at most (1-1000)")
	return c
}

func casesShow(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "One case, e.g. ingest-17, with its evidence and the actions that close it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, err := parseCaseID(args[0]); err != nil {
				return err
			}
			k, raw, err := o.getCase(cmd, args[0])
			if err != nil {
				return err
			}
			return o.print(raw, "ID\tKIND\tSUBJECT\tAMOUNT\tORDER\tOPENED\tSTATE\tACTIONS\tEVIDENCE",
				[][]any{{k.ID, k.Kind, k.Subject, money(k), dash(k.OrderID), k.OpenedAt, state(k),
					dash(strings.Join(k.Actions, ",")), string(k.Evidence)}})
		},
	}
}

func (o *options) getCase(cmd *cobra.Command, id string) (cases.View, json.RawMessage, error) {
	var k cases.View
	raw, err := o.client("reconciler").call(cmd.Context(), http.MethodGet, "/admin/cases/"+url.PathEscape(id), nil, &k)
	return k, raw, err
}

// parseCaseID splits "<service>-<n>".
func parseCaseID(id string) (string, int64, error) {
	svc, n, ok := cases.ParseID(id)
	if !ok {
		return "", 0, &Error{ExitUsage, fmt.Errorf("ID: want <service>-<number>, e.g. ingest-17 (service ingest, invoicer or reconciler), got %q", id)}
	}
	return svc, n, nil
}

func money(k cases.View) string {
	if k.AmountMinor == nil {
		return "-"
	}
	return fmt.Sprintf("%d.%02d %s", *k.AmountMinor/100, abs(*k.AmountMinor%100), k.Currency)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func state(k cases.View) string {
	if k.ClosedAt == "" {
		return "open"
	}
	return "closed (" + k.Action + " by " + k.ClosedBy + ")"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
