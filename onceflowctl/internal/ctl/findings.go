package ctl

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"
)

// findingsPage is GET /admin/findings of the reconciler.
type findingsPage struct {
	Findings []struct {
		ID         int64  `json:"id"`
		Kind       string `json:"kind"`
		Reference  string `json:"reference"`
		Detail     string `json:"detail"`
		OpenedAt   string `json:"opened_at"`
		LastSeenAt string `json:"last_seen_at"`
		SeenCount  int    `json:"seen_count"`
	} `json:"findings"`
}

func findingsCmd(o *options) *cobra.Command {
	var kind string
	var limit int
	c := &cobra.Command{
		Use:   "findings",
		Short: "Open findings of the reconciler (stuck work, provider audit), oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var page findingsPage
			path := "/admin/findings?limit=" + strconv.Itoa(limit) + "&kind=" + url.QueryEscape(kind)
			raw, err := o.client("reconciler").call(cmd.Context(), http.MethodGet, path, nil, &page)
			if err != nil {
				return err
			}
			rows := make([][]any, len(page.Findings))
			for i, f := range page.Findings {
				rows[i] = []any{f.Kind, f.Reference, f.OpenedAt, f.SeenCount, f.Detail}
			}
			return o.print(raw, "KIND\tREFERENCE\tOPENED\tSEEN\tDETAIL", rows)
		},
	}
	c.Flags().StringVar(&kind, "kind", "", "only findings of this kind, e.g. outbox_parked")
	c.Flags().IntVar(&limit, "limit", 100, "findings at most (1-1000)")
	return c
}

func auditCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "audit",
		Short: "Run a reconciliation now (sweep, detectors, provider audit) and print its counts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var run struct {
				RunID       int64 `json:"run_id"`
				Checked     int   `json:"checked"`
				Missing     int   `json:"missing"`
				Republished int   `json:"republished"`
				MissingEvts int   `json:"missing_events"`
				Findings    int   `json:"findings"`
				Closed      int   `json:"closed"`
			}
			raw, err := o.client("reconciler").call(cmd.Context(), http.MethodPost, "/admin/runs", nil, &run)
			if err != nil {
				return err
			}
			return o.print(raw, "RUN\tCHECKED\tMISSING\tREPUBLISHED\tMISSING EVENTS\tFINDINGS\tCLOSED",
				[][]any{{run.RunID, run.Checked, run.Missing, run.Republished, run.MissingEvts, run.Findings, run.Closed}})
		},
	}
}
