package ctl

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/onceflow/onceflow/pkg/reveals"
)

// revealsCmd lists the reveals of personal data ingest, the invoicer and
// the reconciler recorded (GET /admin/reveals of each), newest first.
func revealsCmd(o *options) *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "reveals",
		Short: "Who was shown which customer's or case's personal data, why and when (never the data), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 1000 {
				return &Error{ExitUsage, fmt.Errorf("--limit: want 1 to 1000, got %d", limit)}
			}
			all := []reveals.Reveal{}
			for _, svc := range []string{"ingest", "invoicer", "reconciler"} {
				var page struct {
					Reveals []reveals.Reveal `json:"reveals"`
				}
				if _, err := o.client(svc).call(cmd.Context(), http.MethodGet, "/admin/reveals?limit="+strconv.Itoa(limit), nil, &page); err != nil {
					return err
				}
				all = append(all, page.Reveals...)
			}
			sort.SliceStable(all, func(i, j int) bool { return all[i].At.After(all[j].At) })
			rows := make([][]any, len(all))
			for i, r := range all {
				rows[i] = []any{r.At.Format("2006-01-02T15:04:05Z"), r.Service, r.Subject, r.Actor, r.Reason}
			}
			return o.print(map[string]any{"reveals": all}, "AT\tSERVICE\tSUBJECT\tWHO\tWHY", rows)
		},
	}
	c.Flags().IntVar(&limit, "limit", 100, "reveals at most of each service (1-1000)")
	return c
}
