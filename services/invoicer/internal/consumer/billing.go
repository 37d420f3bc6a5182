package consumer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Billing records the documents billing events ask for.
type Billing struct {
	store    *store.Store
	log      *zap.Logger
	recorded func() // tells the emission loop a document is due
}

// NewBilling returns the billing-event handler recording into st; recorded
// (when set) is told once per batch that recorded a new document.
func NewBilling(st *store.Store, log *zap.Logger, recorded func()) *Billing {
	return &Billing{store: st, log: log, recorded: recorded}
}

// entry is one well-formed billing event of a batch.
type entry struct {
	msg       int // its index in the batch
	params    store.NewDocument
	reference string // the reference it took, once recorded
}

// Handle records the documents a batch of billing events asks for, all or
// nothing (usually one statement); should that fail, each is recorded
// alone, so one bad row cannot hold back the others. A redelivered event inserts nothing ("duplicate");
// one that cannot be parsed is "poison" and stays in the queue. It is a
// BatchHandler.
func (b *Billing) Handle(ctx context.Context, msgs []Message) []Result {
	res := make([]Result, len(msgs))
	var entries []entry
	for i, m := range msgs {
		p, err := decode(m.Body)
		if err != nil {
			res[i] = Result{Outcome: "poison", Err: fmt.Errorf("%w: %v", errPoison, err)}
			continue
		}
		p.Traceparent = tracing.Traceparent(m.Ctx)
		entries = append(entries, entry{msg: i, params: p})
	}
	// Inserted in one order (the first of equal references wins), so two
	// batches holding the same events wait for each other instead of
	// deadlocking.
	slices.SortStableFunc(entries, func(x, y entry) int {
		return strings.Compare(x.params.References[0], y.params.References[0])
	})
	if err := b.record(ctx, entries, res); err != nil {
		b.log.Warn("record batch; recording each event alone", zap.Int("events", len(entries)), zap.Error(err))
		for i := range entries {
			_ = b.record(ctx, entries[i:i+1], res)
		}
	}
	b.report(entries, res)
	return res
}

// decode parses a billing event into the document to record.
func decode(body string) (store.NewDocument, error) {
	var ev eventsv1.BillingEvent
	if err := eventsv1.Decode([]byte(body), &ev); err != nil {
		return store.NewDocument{}, err
	}
	return Params(&ev)
}

// record records entries all or nothing (store.Store.RecordDocuments:
// usually one statement, committed on its own), setting each one's result
// in res and the reference each took; it returns the first error, after
// which nothing was recorded and res is to be set again.
func (b *Billing) record(ctx context.Context, entries []entry, res []Result) (first error) {
	if len(entries) == 0 {
		return nil
	}
	docs := make([]store.NewDocument, len(entries))
	for i, e := range entries {
		docs[i] = e.params
	}
	for i, rec := range b.store.RecordDocuments(ctx, docs) {
		r := Result{Outcome: "recorded"}
		entries[i].reference = rec.Reference
		switch {
		case errors.Is(rec.Err, store.ErrDuplicate):
			r.Outcome = "duplicate"
		case rec.Err != nil:
			r = Result{Outcome: "error", Err: rec.Err}
			first = cmp.Or(first, r.Err)
		}
		res[entries[i].msg] = r
	}
	return first
}

// report logs what was committed for each entry and, when a document is
// new, tells the emission loop once.
func (b *Billing) report(entries []entry, res []Result) {
	fresh := false
	for _, e := range entries {
		switch res[e.msg].Outcome {
		case "duplicate":
			b.log.Info("document already recorded", zap.String("event_key", e.params.EventKey))
		case "recorded":
			fresh = true
			b.log.Info("document recorded", zap.String("event_key", e.params.EventKey), zap.String("reference", e.reference), zap.Int32("cfe_type", int32(e.params.CFEType)))
		}
	}
	if fresh && b.recorded != nil {
		b.recorded()
	}
}

// Params turns a billing event into the document to record: kind,
// deterministic reference and CFE type, with the buyer and lines as JSON.
// Amounts stay integer minor units throughout. An error says the event is
// malformed.
func Params(ev *eventsv1.BillingEvent) (store.NewDocument, error) {
	kind, ok := map[eventsv1.DocumentKind]fiscal.Kind{
		eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE:     fiscal.KindInvoice,
		eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE: fiscal.KindCreditNote,
	}[ev.Kind]
	switch {
	case !ok:
		return store.NewDocument{}, fmt.Errorf("unknown document kind %v", ev.Kind)
	case ev.SourceRef == "" || ev.AmountMinor <= 0 || ev.Currency == "" || ev.GetBuyer() == nil:
		return store.NewDocument{}, errors.New("event lacks source_ref, amount, currency or buyer")
	case (kind == fiscal.KindInvoice) != (ev.SourceKind == "payment") || (kind == fiscal.KindCreditNote) != (ev.SourceKind == "refund"):
		return store.NewDocument{}, fmt.Errorf("source kind %q does not go with a %s", ev.SourceKind, kind)
	case (kind == fiscal.KindCreditNote) != (ev.PaymentRef != ""):
		return store.NewDocument{}, errors.New("a credit note, and only a credit note, names its payment_ref")
	}
	b := ev.GetBuyer()
	buyer := fiscal.Buyer{DocType: b.DocType, Country: b.DocCountry, Number: b.DocNumber, Name: b.LegalName,
		Address: b.Address, City: b.City, Department: b.Department, Email: b.Email}
	lines := make([]fiscal.Line, 0, len(ev.Lines))
	for i, l := range ev.Lines {
		ind, err := vat.ParseIndicator(l.Vat)
		if err != nil {
			return store.NewDocument{}, fmt.Errorf("line %d: %w", i+1, err)
		}
		lines = append(lines, fiscal.Line{Description: l.Description, Quantity: l.Quantity, UnitMinor: l.UnitMinor, AmountMinor: l.AmountMinor, VAT: ind})
	}
	buyerJSON, err := json.Marshal(buyer)
	if err != nil {
		return store.NewDocument{}, err
	}
	linesJSON, err := json.Marshal(lines)
	if err != nil {
		return store.NewDocument{}, err
	}
	p := store.NewDocument{
		SourceKind: ev.SourceKind, SourceRef: ev.SourceRef, Kind: kind, EventKey: ev.EventKey,
		References: fiscal.References(ev.SourceKind, ev.SourceRef, kind), CFEType: fiscal.TypeFor(buyer, kind),
		AmountMinor: ev.AmountMinor, Currency: ev.Currency, Buyer: buyerJSON, Lines: linesJSON,
	}
	if kind == fiscal.KindCreditNote {
		p.OriginalSourceRef = &ev.PaymentRef
	}
	if ev.OccurredAt.IsValid() {
		at := ev.OccurredAt.AsTime()
		p.AcceptedAt = &at
	}
	return p, nil
}
