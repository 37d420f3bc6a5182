package ctl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/spf13/cobra"
)

// pipeline is the state status gathers, one part per service; a part is
// nil when its service did not answer.
type pipeline struct {
	Ingest *struct {
		Receipts      map[string]int64 `json:"receipts"`
		OldestPending *time.Time       `json:"oldest_pending"`
	} `json:"ingest"`
	Relay    *relayStatus `json:"relay"`
	Invoicer *struct {
		Documents map[string]int64 `json:"documents"`
		Due       int64            `json:"due"`
		OldestDue *time.Time       `json:"oldest_due"`
	} `json:"invoicer"`
	Reconciler *findingsPage     `json:"reconciler"`
	Errors     map[string]string `json:"errors,omitempty"`
}

func statusCmd(o *options) *cobra.Command {
	var check bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Pipeline state per stage: receipts, outbox rows, documents by status, open findings",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, unreachable := o.gather(cmd.Context())
			if err := o.print(p, "STAGE\tWHAT\tCOUNT\tOLDEST", p.rows()); err != nil {
				return err
			}
			switch {
			case unreachable != nil:
				return unreachable
			case check && p.needsPerson():
				return &Error{ExitProblem, errors.New("status: work waits for a person (parked rows or receipts, needs-attention documents, open findings)")}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&check, "check", false, "exit 1 when anything is parked, a document needs attention or a finding is open")
	return c
}

// gather asks every service; it returns the first unreachable-service error.
func (o *options) gather(ctx context.Context) (pipeline, error) {
	var p pipeline
	var first error
	note := func(service string, err error) {
		if err == nil {
			return
		}
		if p.Errors == nil {
			p.Errors = map[string]string{}
		}
		p.Errors[service] = err.Error()
		if first == nil {
			first = err
		}
	}
	if _, err := o.client("ingest").call(ctx, http.MethodGet, "/admin/status", nil, &p.Ingest); err != nil {
		p.Ingest = nil
		note("ingest", err)
	}
	if _, err := o.client("relay").call(ctx, http.MethodGet, "/admin/outboxes", nil, &p.Relay); err != nil {
		p.Relay = nil
		note("relay", err)
	}
	if _, err := o.client("invoicer").call(ctx, http.MethodGet, "/admin/status", nil, &p.Invoicer); err != nil {
		p.Invoicer = nil
		note("invoicer", err)
	}
	if _, err := o.client("reconciler").call(ctx, http.MethodGet, "/admin/findings?limit=1000", nil, &p.Reconciler); err != nil {
		p.Reconciler = nil
		note("reconciler", err)
	}
	return p, first
}

func (p pipeline) rows() [][]any {
	var rows [][]any
	if p.Ingest != nil {
		for _, st := range []string{"pending", "parked", "rejected", "done"} {
			oldest := "-"
			if st == "pending" {
				oldest = since(p.Ingest.OldestPending)
			}
			rows = append(rows, []any{"ingest", "receipts " + st, p.Ingest.Receipts[st], oldest})
		}
	}
	if p.Relay != nil {
		for _, ob := range p.Relay.Outboxes {
			rows = append(rows, []any{"relay", ob.Outbox + " pending", ob.Pending, since(ob.OldestPending)},
				[]any{"relay", ob.Outbox + " parked", ob.Parked, "-"})
		}
	}
	if p.Invoicer != nil {
		rows = append(rows, []any{"invoicer", "documents due", p.Invoicer.Due, since(p.Invoicer.OldestDue)})
		for _, st := range []string{"pending", "unknown", "pending_dgi", "needs_attention", "authorized", "observed", "issued", "rejected", "voided"} {
			rows = append(rows, []any{"invoicer", "documents " + st, p.Invoicer.Documents[st], "-"})
		}
	}
	if p.Reconciler != nil {
		for _, kc := range p.findingsByKind() {
			rows = append(rows, []any{"reconciler", "findings " + kc.kind, kc.n, "-"})
		}
		if len(p.Reconciler.Findings) == 0 {
			rows = append(rows, []any{"reconciler", "findings", 0, "-"})
		}
	}
	services := make([]string, 0, len(p.Errors))
	for s := range p.Errors {
		services = append(services, s)
	}
	sort.Strings(services)
	for _, s := range services {
		rows = append(rows, []any{s, "unreachable: " + p.Errors[s], "-", "-"})
	}
	return rows
}

type kindCount struct {
	kind string
	n    int
}

func (p pipeline) findingsByKind() []kindCount {
	counts := map[string]int{}
	for _, f := range p.Reconciler.Findings {
		counts[f.Kind]++
	}
	out := make([]kindCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, kindCount{k, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].kind < out[j].kind })
	return out
}

// needsPerson reports parked work or open findings.
func (p pipeline) needsPerson() bool {
	if p.Ingest != nil && p.Ingest.Receipts["parked"] > 0 {
		return true
	}
	if p.Relay != nil {
		for _, ob := range p.Relay.Outboxes {
			if ob.Parked > 0 {
				return true
			}
		}
	}
	if p.Invoicer != nil && p.Invoicer.Documents["needs_attention"] > 0 {
		return true
	}
	return p.Reconciler != nil && len(p.Reconciler.Findings) > 0
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
