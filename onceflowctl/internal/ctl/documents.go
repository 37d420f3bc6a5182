package ctl

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// document is a fiscal document as the invoicer shows it (no buyer data).
type document struct {
	ID              int64     `json:"id"`
	SourceKind      string    `json:"source_kind"`
	SourceRef       string    `json:"source_ref"`
	Reference       string    `json:"reference"`
	CFEType         int       `json:"cfe_type"`
	Status          string    `json:"status"`
	AmountMinor     int64     `json:"amount_minor"`
	Currency        string    `json:"currency"`
	Series          *string   `json:"series"`
	Number          *int64    `json:"number"`
	Attempts        int       `json:"attempts"`
	AttentionReason *string   `json:"attention_reason"`
	UpdatedAt       time.Time `json:"updated_at"`
}

func documentsCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "documents", Short: "Fiscal documents: list by status, show one, resolve needs-attention"}
	cmd.AddCommand(documentsList(o), documentsShow(o), documentsResolve(o))
	return cmd
}

func documentsList(o *options) *cobra.Command {
	var status string
	var limit int
	var before int64
	c := &cobra.Command{
		Use:   "list",
		Short: "List documents, newest first (--status needs_attention for the ones waiting for a person)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var page struct {
				Documents []document `json:"documents"`
			}
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if status != "" {
				q.Set("status", status)
			}
			if before > 0 {
				q.Set("before", strconv.FormatInt(before, 10))
			}
			raw, err := o.client("invoicer").call(cmd.Context(), http.MethodGet, "/admin/documents?"+q.Encode(), nil, &page)
			if err != nil {
				return err
			}
			rows := make([][]any, len(page.Documents))
			for i, d := range page.Documents {
				rows[i] = []any{d.ID, d.SourceKind + ":" + d.SourceRef, d.Reference, d.CFEType, d.Status, d.Attempts, deref(d.AttentionReason)}
			}
			return o.print(raw, "ID\tSOURCE\tREFERENCE\tTYPE\tSTATUS\tATTEMPTS\tATTENTION", rows)
		},
	}
	c.Flags().StringVar(&status, "status", "", "only this status: pending, unknown, pending_dgi, authorized, issued, rejected, voided, needs_attention")
	c.Flags().IntVar(&limit, "limit", 100, "documents at most")
	c.Flags().Int64Var(&before, "before", 0, "documents with an id below this one (the last id of the previous page)")
	return c
}

func documentsShow(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "show DOCUMENT_ID",
		Short: "One document with every provider call and resolution",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := positiveID(args[0], "DOCUMENT_ID")
			if err != nil {
				return err
			}
			var shown struct {
				Document document `json:"document"`
				Attempts []struct {
					Operation string    `json:"operation"`
					Outcome   string    `json:"outcome"`
					Error     *string   `json:"error"`
					LatencyMS int       `json:"latency_ms"`
					At        time.Time `json:"at"`
				} `json:"attempts"`
				Resolutions []struct {
					Action, Actor, Reason string
				} `json:"resolutions"`
			}
			raw, err := o.client("invoicer").call(cmd.Context(), http.MethodGet, "/admin/documents/"+strconv.FormatInt(id, 10), nil, &shown)
			if err != nil {
				return err
			}
			d := shown.Document
			rows := [][]any{{"document", id, d.Reference, d.Status, deref(d.AttentionReason)}}
			for _, a := range shown.Attempts {
				rows = append(rows, []any{"call " + a.Operation, a.At.UTC().Format(time.RFC3339), a.Outcome, strconv.Itoa(a.LatencyMS) + " ms", deref(a.Error)})
			}
			for _, r := range shown.Resolutions {
				rows = append(rows, []any{"resolution " + r.Action, r.Actor, "", "", r.Reason})
			}
			return o.print(raw, "WHAT\tID/WHEN\tREFERENCE/OUTCOME\tSTATUS/LATENCY\tDETAIL", rows)
		},
	}
}

func documentsResolve(o *options) *cobra.Command {
	var action, actor, reason, series string
	var number int64
	c := &cobra.Command{
		Use:   "resolve DOCUMENT_ID",
		Short: "Resolve a needs-attention document: --action adopt (--series, --number), retry or void, with --actor and --reason",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := positiveID(args[0], "DOCUMENT_ID")
			if err != nil {
				return err
			}
			switch {
			case action != "adopt" && action != "retry" && action != "void":
				return &Error{ExitUsage, errorf("--action: want adopt, retry or void")}
			case actor == "" || reason == "":
				return &Error{ExitUsage, errorf("--actor and --reason: say who decides and why; both are recorded")}
			case action == "adopt" && (series == "" || number < 1):
				return &Error{ExitUsage, errorf("--series and --number: adopt needs the provider document's series and number")}
			}
			body := map[string]any{"action": action, "actor": actor, "reason": reason}
			if action == "adopt" {
				body["series"], body["number"] = series, number
			}
			var res struct {
				Document document `json:"document"`
			}
			raw, err := o.client("invoicer").call(cmd.Context(), http.MethodPost, "/admin/documents/"+strconv.FormatInt(id, 10)+"/resolve", body, &res)
			if err != nil {
				return err
			}
			return o.print(raw, "ID\tREFERENCE\tSTATUS", [][]any{{res.Document.ID, res.Document.Reference, res.Document.Status}})
		},
	}
	c.Flags().StringVar(&action, "action", "", "adopt, retry or void")
	c.Flags().StringVar(&actor, "actor", "", "who decides (recorded)")
	c.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	c.Flags().StringVar(&series, "series", "", "adopt: the provider document's series")
	c.Flags().Int64Var(&number, "number", 0, "adopt: the provider document's number")
	return c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
