package httpapi

import (
	"github.com/onceflow/onceflow/services/ingest/internal/notices"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// OrderView is an order as GET /v1/orders/{id} shows it: the order and the
// fiscal documents of its payment and refunds, as the invoicer announced
// them (docs/notifications.md).
type OrderView struct {
	Order
	// Invoice is the latest revision of the payment's invoice; absent until
	// the invoicer has announced one.
	Invoice *notices.DocumentView `json:"invoice,omitempty"`
	// CreditNotes are the refunds' credit notes, oldest first.
	CreditNotes []notices.DocumentView `json:"credit_notes"`
}

func orderWithDocuments(o Order, docs []store.Document) OrderView {
	v := OrderView{Order: o, CreditNotes: []notices.DocumentView{}}
	for _, d := range docs {
		view := notices.View(d)
		switch {
		case d.Kind == "credit_note":
			v.CreditNotes = append(v.CreditNotes, view)
		case v.Invoice == nil || d.Revision > v.Invoice.Revision:
			v.Invoice = &view
		}
	}
	return v
}
