package ctl

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/onceflow/onceflow/pkg/cases"
)

// resolveFlags are cases resolve's flags, sent as the resolve body.
type resolveFlags struct {
	Action      string `json:"action"`
	Actor       string `json:"actor"`
	Reason      string `json:"reason"`
	PSPRefundID string `json:"psp_refund_id,omitempty"`
}

func casesResolve(o *options) *cobra.Command {
	var f resolveFlags
	c := &cobra.Command{
		Use:   "resolve ID --action A --actor WHO --reason WHY",
		Short: "Close a case with an action, sent to the service that owns it (a parked outbox row is unparked through the relay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, n, err := parseCaseID(args[0])
			if err != nil {
				return err
			}
			for flag, v := range map[string]string{"--action": f.Action, "--actor": f.Actor, "--reason": f.Reason} {
				if strings.TrimSpace(v) == "" {
					return &Error{ExitUsage, fmt.Errorf("%s is required", flag)}
				}
			}
			k, _, err := o.getCase(cmd, args[0])
			if err != nil {
				return err
			}
			if k.Kind == cases.ParkedOutboxRow {
				if err := o.unparkCase(cmd, k, f); err != nil {
					return err
				}
			} else {
				path := "/admin/cases/" + strconv.FormatInt(n, 10) + "/resolve"
				if svc == "reconciler" {
					path = "/admin/cases/" + args[0] + "/resolve"
				}
				if _, err := o.client(svc).call(cmd.Context(), http.MethodPost, path, f, nil); err != nil {
					return err
				}
			}
			k, raw, err := o.getCase(cmd, args[0])
			if err != nil {
				return err
			}
			return o.print(raw, "ID\tKIND\tSUBJECT\tSTATE\tREASON", [][]any{{k.ID, k.Kind, k.Subject, state(k), k.Reason}})
		},
	}
	c.Flags().StringVar(&f.Action, "action", "", "the action that closes the case (cases show lists them)")
	c.Flags().StringVar(&f.Actor, "actor", "", "who closes it (recorded)")
	c.Flags().StringVar(&f.Reason, "reason", "", "why (recorded)")
	c.Flags().StringVar(&f.PSPRefundID, "psp-refund-id", "", "the PSP's refund id, for refunded_at_psp")
	return c
}

// unparkCase closes a parked_outbox_row case the only way it closes: the
// relay unparks its row (subject outbox:<id> of the owning service's
// outbox), and the producer's trigger records actor and reason.
func (o *options) unparkCase(cmd *cobra.Command, k cases.View, f resolveFlags) error {
	if f.Action != cases.ActionUnpark {
		return &Error{ExitUsage, fmt.Errorf("--action: a parked_outbox_row case closes with unpark, got %q", f.Action)}
	}
	if k.ClosedAt != "" {
		return &Error{ExitProblem, fmt.Errorf("case %s is closed already (%s by %s)", k.ID, k.Action, k.ClosedBy)}
	}
	row, ok := strings.CutPrefix(k.Subject, "outbox:")
	if _, err := strconv.ParseInt(row, 10, 64); !ok || err != nil {
		return &Error{ExitProblem, fmt.Errorf("case %s: subject %q names no outbox row", k.ID, k.Subject)}
	}
	path := "/admin/outboxes/" + k.Service + ".outbox/parked/" + row + "/unpark"
	body := map[string]string{"actor": f.Actor, "reason": f.Reason}
	_, err := o.client("relay").call(cmd.Context(), http.MethodPost, path, body, nil)
	return err
}
