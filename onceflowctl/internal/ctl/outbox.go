package ctl

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

func outboxCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "outbox", Short: "Outbox rows the relay publishes: backlog, parked rows, unpark, replay"}
	cmd.AddCommand(outboxList(o), outboxParked(o), outboxUnpark(o), outboxReplay(o))
	return cmd
}

func outboxList(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Each outbox's pending and parked rows",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st relayStatus
			raw, err := o.client("relay").call(cmd.Context(), http.MethodGet, "/admin/outboxes", nil, &st)
			if err != nil {
				return err
			}
			rows := make([][]any, len(st.Outboxes))
			for i, ob := range st.Outboxes {
				rows[i] = []any{ob.Outbox, ob.Pending, ob.Parked, since(ob.OldestPending)}
			}
			return o.print(raw, "OUTBOX\tPENDING\tPARKED\tOLDEST PENDING", rows)
		},
	}
}

func outboxParked(o *options) *cobra.Command {
	var limit int
	var after int64
	c := &cobra.Command{
		Use:   "parked OUTBOX",
		Short: "List an outbox's parked rows (e.g. ingest.outbox), without payloads",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var page struct {
				Rows []struct {
					ID       int64     `json:"id"`
					EventKey string    `json:"event_key"`
					Type     string    `json:"event_type"`
					Attempts int       `json:"attempts"`
					ParkedAt time.Time `json:"parked_at"`
					Reason   string    `json:"parked_reason"`
				} `json:"rows"`
			}
			path := "/admin/outboxes/" + url.PathEscape(args[0]) + "/parked?limit=" + strconv.Itoa(limit) + "&after_id=" + strconv.FormatInt(after, 10)
			raw, err := o.client("relay").call(cmd.Context(), http.MethodGet, path, nil, &page)
			if err != nil {
				return err
			}
			rows := make([][]any, len(page.Rows))
			for i, r := range page.Rows {
				rows[i] = []any{r.ID, r.EventKey, r.Type, r.Attempts, since(&r.ParkedAt), r.Reason}
			}
			return o.print(raw, "ID\tEVENT KEY\tTYPE\tATTEMPTS\tPARKED\tREASON", rows)
		},
	}
	c.Flags().IntVar(&limit, "limit", 100, "rows per page (1-1000)")
	c.Flags().Int64Var(&after, "after", 0, "list rows after this id")
	return c
}

func outboxUnpark(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "unpark OUTBOX ROW_ID",
		Short: "Make a parked row due again, attempts reset",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := positiveID(args[1], "ROW_ID")
			if err != nil {
				return err
			}
			path := "/admin/outboxes/" + url.PathEscape(args[0]) + "/parked/" + strconv.FormatInt(id, 10) + "/unpark"
			raw, err := o.client("relay").call(cmd.Context(), http.MethodPost, path, nil, nil)
			if err != nil {
				return err
			}
			return o.print(raw, "OUTBOX\tROW\tSTATUS", [][]any{{args[0], id, "due"}})
		},
	}
}

func outboxReplay(o *options) *cobra.Command {
	var fromID, toID int64
	var from, to string
	var limit int
	c := &cobra.Command{
		Use:   "replay OUTBOX",
		Short: "Publish again the published rows in an id range (--from-id/--to-id) or time range (--from/--to, RFC 3339)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"limit": limit}
			if fromID > 0 || toID > 0 {
				body["from_id"], body["to_id"] = fromID, toID
			}
			for flag, v := range map[string]string{"from": from, "to": to} {
				if v == "" {
					continue
				}
				if _, err := time.Parse(time.RFC3339, v); err != nil {
					return &Error{ExitUsage, errorf("--%s: want an RFC 3339 time such as 2026-11-30T10:00:00Z", flag)}
				}
				body[flag] = v
			}
			if len(body) == 1 {
				return &Error{ExitUsage, errorf("want --from-id/--to-id or --from/--to")}
			}
			var res struct {
				Replayed int   `json:"replayed"`
				LastID   int64 `json:"last_id"`
				More     bool  `json:"more"`
			}
			raw, err := o.client("relay").call(cmd.Context(), http.MethodPost, "/admin/outboxes/"+url.PathEscape(args[0])+"/replay", body, &res)
			if err != nil {
				return err
			}
			return o.print(raw, "OUTBOX\tREPLAYED\tLAST ID\tMORE", [][]any{{args[0], res.Replayed, res.LastID, res.More}})
		},
	}
	c.Flags().Int64Var(&fromID, "from-id", 0, "first row id")
	c.Flags().Int64Var(&toID, "to-id", 0, "last row id")
	c.Flags().StringVar(&from, "from", "", "rows created at or after this time (RFC 3339)")
	c.Flags().StringVar(&to, "to", "", "rows created before this time (RFC 3339)")
	c.Flags().IntVar(&limit, "limit", 1000, "rows at most (up to 10000)")
	return c
}

// relayStatus is GET /admin/outboxes.
type relayStatus struct {
	Outboxes []struct {
		Outbox        string     `json:"outbox"`
		Pending       int64      `json:"pending"`
		Parked        int64      `json:"parked"`
		OldestPending *time.Time `json:"oldest_pending"`
	} `json:"outboxes"`
}
