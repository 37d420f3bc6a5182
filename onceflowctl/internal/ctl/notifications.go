package ctl

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// notificationsCmd lists ingest's merchant notifications and replays one
// (docs/notifications.md).
func notificationsCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "notifications", Short: "Notifications ingest delivers to the merchant's webhook"}
	var status string
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List notifications, newest first, optionally of one status (pending, delivered, parked)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var page struct {
				Notifications []struct {
					ID        int64      `json:"id"`
					EventID   string     `json:"event_id"`
					Status    string     `json:"status"`
					Attempts  int        `json:"attempts"`
					LastError *string    `json:"last_error"`
					CreatedAt *time.Time `json:"created_at"`
				} `json:"notifications"`
			}
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if status != "" {
				q.Set("status", status)
			}
			raw, err := o.client("ingest").call(cmd.Context(), http.MethodGet, "/admin/notifications?"+q.Encode(), nil, &page)
			if err != nil {
				return err
			}
			rows := make([][]any, len(page.Notifications))
			for i, n := range page.Notifications {
				rows[i] = []any{n.ID, n.EventID, n.Status, n.Attempts, since(n.CreatedAt), deref(n.LastError)}
			}
			return o.print(raw, "ID\tEVENT\tSTATUS\tATTEMPTS\tCREATED\tLAST ERROR", rows)
		},
	}
	list.Flags().StringVar(&status, "status", "", "pending, delivered or parked (default all)")
	list.Flags().IntVar(&limit, "limit", 100, "notifications per page (1-1000)")
	cmd.AddCommand(list, replayCmd(o))
	return cmd
}

// replayCmd sends one parked or delivered notification again.
func replayCmd(o *options) *cobra.Command {
	var actor, reason string
	c := &cobra.Command{
		Use:   "replay ID --actor WHO --reason WHY",
		Short: "Send a parked or delivered notification to the merchant again, under its same event id, attempts reset",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := positiveID(args[0], "ID")
			if err != nil {
				return err
			}
			for _, f := range [][2]string{{"--actor", actor}, {"--reason", reason}} { // in this order, so the message is stable
				if strings.TrimSpace(f[1]) == "" {
					return &Error{ExitUsage, fmt.Errorf("%s is required", f[0])}
				}
			}
			path := "/admin/notifications/" + strconv.FormatInt(id, 10) + "/replay"
			raw, err := o.client("ingest").call(cmd.Context(), http.MethodPost, path, map[string]string{"actor": actor, "reason": reason}, nil)
			if err != nil {
				return err
			}
			return o.print(raw, "NOTIFICATION\tSTATUS", [][]any{{id, "pending"}})
		},
	}
	c.Flags().StringVar(&actor, "actor", "", "who replays it (recorded)")
	c.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	return c
}
