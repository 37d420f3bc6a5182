package ctl

import (
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

func receiptsCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "receipts", Short: "Webhook receipts ingest could not apply"}
	var limit int
	var after int64
	list := &cobra.Command{
		Use:   "parked",
		Short: "List parked receipts, oldest first (never their bodies)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var page struct {
				Receipts []struct {
					ID         int64     `json:"id"`
					Source     string    `json:"source"`
					EventID    string    `json:"event_id"`
					EventType  string    `json:"event_type"`
					Attempts   int       `json:"attempts"`
					LastError  string    `json:"last_error"`
					ReceivedAt time.Time `json:"received_at"`
				} `json:"receipts"`
			}
			path := "/admin/receipts/parked?limit=" + strconv.Itoa(limit) + "&after=" + strconv.FormatInt(after, 10)
			raw, err := o.client("ingest").call(cmd.Context(), http.MethodGet, path, nil, &page)
			if err != nil {
				return err
			}
			rows := make([][]any, len(page.Receipts))
			for i, r := range page.Receipts {
				rows[i] = []any{r.ID, r.Source, r.EventType, r.EventID, r.Attempts, since(&r.ReceivedAt), r.LastError}
			}
			return o.print(raw, "ID\tSOURCE\tTYPE\tEVENT\tATTEMPTS\tRECEIVED\tLAST ERROR", rows)
		},
	}
	list.Flags().IntVar(&limit, "limit", 100, "receipts per page (1-1000)")
	list.Flags().Int64Var(&after, "after", 0, "list receipts after this id (the last id of the previous page)")
	retry := &cobra.Command{
		Use:   "retry RECEIPT_ID",
		Short: "Send a parked or rejected receipt back to the apply worker, attempts reset",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := positiveID(args[0], "RECEIPT_ID")
			if err != nil {
				return err
			}
			raw, err := o.client("ingest").call(cmd.Context(), http.MethodPost, "/admin/receipts/"+strconv.FormatInt(id, 10)+"/retry", nil, nil)
			if err != nil {
				return err
			}
			return o.print(raw, "RECEIPT\tSTATUS", [][]any{{id, "pending"}})
		},
	}
	cmd.AddCommand(list, retry)
	return cmd
}

func positiveID(s, name string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, &Error{ExitUsage, errorf("%s: want a positive number, got %q", name, s)}
	}
	return id, nil
}
