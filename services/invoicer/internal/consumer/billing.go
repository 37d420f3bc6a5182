package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Billing records the documents billing events ask for.
type Billing struct {
	queries  *store.Queries
	log      *zap.Logger
	recorded func() // tells the emission loop a document is due
}

// NewBilling returns the billing-event handler; recorded (when set) is told
// of each new document.
func NewBilling(q *store.Queries, log *zap.Logger, recorded func()) *Billing {
	return &Billing{queries: q, log: log, recorded: recorded}
}

// Handle inserts the document a billing event asks for; a redelivered event
// inserts nothing ("duplicate"). It is a Handler.
func (b *Billing) Handle(ctx context.Context, body string) (string, error) {
	var ev eventsv1.BillingEvent
	if err := eventsv1.Decode([]byte(body), &ev); err != nil {
		return "poison", fmt.Errorf("%w: %v", errPoison, err)
	}
	params, err := Params(&ev)
	if err != nil {
		return "poison", fmt.Errorf("%w: %v", errPoison, err)
	}
	params.Traceparent = tracing.Traceparent(ctx)
	n, err := b.queries.DocumentRecord(ctx, params)
	if err != nil {
		return "error", fmt.Errorf("record %s: %w", ev.EventKey, err)
	}
	if n == 0 {
		b.log.Info("document already recorded", zap.String("event_key", ev.EventKey))
		return "duplicate", nil
	}
	b.log.Info("document recorded", zap.String("event_key", ev.EventKey), zap.String("reference", params.Reference), zap.Int32("cfe_type", params.CfeType))
	if b.recorded != nil {
		b.recorded()
	}
	return "recorded", nil
}

// Params turns a billing event into the document row to record: kind,
// deterministic reference and CFE type, with the buyer and lines as JSON.
// Amounts stay integer minor units throughout.
func Params(ev *eventsv1.BillingEvent) (store.DocumentRecordParams, error) {
	kind, ok := map[eventsv1.DocumentKind]fiscal.Kind{
		eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE:     fiscal.KindInvoice,
		eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE: fiscal.KindCreditNote,
	}[ev.Kind]
	switch {
	case !ok:
		return store.DocumentRecordParams{}, fmt.Errorf("unknown document kind %v", ev.Kind)
	case ev.SourceRef == "" || ev.AmountMinor <= 0 || ev.Currency == "" || ev.GetBuyer() == nil:
		return store.DocumentRecordParams{}, errors.New("event lacks source_ref, amount, currency or buyer")
	case (kind == fiscal.KindInvoice) != (ev.SourceKind == "payment") || (kind == fiscal.KindCreditNote) != (ev.SourceKind == "refund"):
		return store.DocumentRecordParams{}, fmt.Errorf("source kind %q does not go with a %s", ev.SourceKind, kind)
	case (kind == fiscal.KindCreditNote) != (ev.PaymentRef != ""):
		return store.DocumentRecordParams{}, errors.New("a credit note, and only a credit note, names its payment_ref")
	}
	b := ev.GetBuyer()
	buyer := fiscal.Buyer{DocType: b.DocType, Country: b.DocCountry, Number: b.DocNumber, Name: b.LegalName,
		Address: b.Address, City: b.City, Department: b.Department, Email: b.Email}
	lines := make([]fiscal.Line, 0, len(ev.Lines))
	for _, l := range ev.Lines {
		lines = append(lines, fiscal.Line{Description: l.Description, Quantity: l.Quantity, UnitMinor: l.UnitMinor, AmountMinor: l.AmountMinor})
	}
	buyerJSON, err := json.Marshal(buyer)
	if err != nil {
		return store.DocumentRecordParams{}, err
	}
	linesJSON, err := json.Marshal(lines)
	if err != nil {
		return store.DocumentRecordParams{}, err
	}
	p := store.DocumentRecordParams{
		SourceKind: ev.SourceKind, SourceRef: ev.SourceRef, Kind: string(kind), EventKey: ev.EventKey,
		Reference: fiscal.Reference(ev.SourceKind, ev.SourceRef, kind), CfeType: int32(fiscal.TypeFor(buyer, kind)),
		AmountMinor: ev.AmountMinor, Currency: ev.Currency, Buyer: buyerJSON, Lines: linesJSON,
	}
	if kind == fiscal.KindCreditNote {
		p.OriginalSourceRef = &ev.PaymentRef
	}
	return p, nil
}
