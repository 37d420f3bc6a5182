package admin

import (
	"time"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

func caseJSON(c store.Case) cases.View {
	out := cases.View{ID: cases.ID(c.Service, c.ID), Service: c.Service, Kind: c.Kind,
		Subject: c.Subject, PSP: c.PSP, PSPPaymentID: c.PSPPaymentID, PSPRefundID: c.PSPRefundID,
		OrderID: c.OrderID, AmountMinor: c.AmountMinor, Currency: c.Currency, Evidence: c.Evidence,
		OpenedAt: stamp(c.OpenedAt), UpdatedAt: stamp(c.UpdatedAt),
		ClosedBy: c.ClosedBy, Action: c.Action, Reason: c.Reason, Actions: []string{}}
	if c.ClosedAt != nil {
		out.ClosedAt = stamp(*c.ClosedAt)
	} else {
		out.Actions = cases.Actions(c.Kind)
	}
	return out
}

// stamp is the reconciler's rendering of a case's times: UTC, to the
// second.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
