package apply

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// OrderLine is one line of an order as stored in orders.lines.
type OrderLine struct {
	Description string `json:"description"`
	Quantity    int64  `json:"quantity"`
	UnitMinor   int64  `json:"unit_minor"`
	AmountMinor int64  `json:"amount_minor"`
	// VAT is how the line is taxed (vat.ParseIndicator's names); empty is
	// the basic rate.
	VAT string `json:"vat,omitempty"`
}

func buyer(c store.Customer) *eventsv1.Buyer {
	return &eventsv1.Buyer{
		DocType: c.DocType, DocCountry: c.DocCountry, DocNumber: c.DocNumber, LegalName: c.LegalName,
		Address: c.Address, City: c.City, Department: c.Department, Country: c.Country, Email: c.Email,
	}
}

// invoiceEvent asks for the invoice of a paid payment, with a snapshot of
// the buyer's fiscal data and the order's lines. The invoice is in the
// currency the payment was charged in: a payment charged in another
// currency than the order's has its lines converted (convertLines).
func invoiceEvent(p psp.Payment, o store.Order, c store.Customer) (outbox.Message, error) {
	var lines []OrderLine
	if err := json.Unmarshal(o.Lines, &lines); err != nil {
		return outbox.Message{}, fmt.Errorf("order %s lines: %w", o.MerchantOrderID, err)
	}
	ev := &eventsv1.BillingEvent{
		EventKey: "payment:" + p.ID + ":paid", Kind: eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE,
		SourceKind: "payment", SourceRef: p.ID, MerchantOrderId: o.MerchantOrderID,
		AmountMinor: p.AmountMinor, Currency: p.Currency, Buyer: buyer(c), OccurredAt: timestamppb.Now(),
	}
	if p.Currency != o.Currency {
		lines = convertLines(lines, p.AmountMinor)
	}
	for _, l := range lines {
		ev.Lines = append(ev.Lines, &eventsv1.Line{Description: l.Description, Quantity: l.Quantity, UnitMinor: l.UnitMinor, AmountMinor: l.AmountMinor, Vat: l.VAT})
	}
	if len(ev.Lines) == 0 {
		ev.Lines = []*eventsv1.Line{{Description: "Order " + o.MerchantOrderID, Quantity: 1, UnitMinor: p.AmountMinor, AmountMinor: p.AmountMinor}}
	}
	return message(ev)
}

// creditNoteEvent asks for the credit note of a successful refund. Each
// refund, partial or full, gets its own credit note, its amount shared among
// the order's VAT indicators (refundLines).
func creditNoteEvent(r psp.Refund, o store.Order, c store.Customer) (outbox.Message, error) {
	ev := &eventsv1.BillingEvent{
		EventKey: "refund:" + r.ID + ":succeeded", Kind: eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE,
		SourceKind: "refund", SourceRef: r.ID, PaymentRef: r.PaymentID, MerchantOrderId: o.MerchantOrderID,
		AmountMinor: r.AmountMinor, Currency: r.Currency, Buyer: buyer(c), OccurredAt: timestamppb.Now(),
		Lines: refundLines("Refund of order "+o.MerchantOrderID, r.AmountMinor, o.Lines),
	}
	return message(ev)
}

func message(ev *eventsv1.BillingEvent) (outbox.Message, error) {
	wire, err := eventsv1.Marshal(ev)
	if err != nil {
		return outbox.Message{}, err
	}
	return outbox.Message{EventKey: ev.EventKey, EventType: eventsv1.TypeBillingDocumentRequested, Payload: wire}, nil
}
