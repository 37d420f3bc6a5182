package emit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// hold says why a document cannot be sent yet: wait names what a credit
// note waits for; attention, set instead, says why it never will without an
// operator; rate says no exchange rate is known for its date (it waits, and
// a case is opened).
type hold struct {
	wait, attention, rate string
}

// document rebuilds what is sent from d, dated now (the database's time),
// with the VAT rates of that date, outside UYU its exchange rate, and an
// e-Ticket's place against the UI threshold.
// A credit note needs its invoice
// authorized first, since it references the invoice's type, series, number
// and date; it waits for that at most Config.CreditNoteWait, and it never
// credits more than the invoice (with the credit notes recorded before it).
func (e *Emitter) document(ctx context.Context, d store.Document, now time.Time) (fiscal.Document, hold, error) {
	day := now.In(fiscal.Montevideo)
	doc := fiscal.Document{
		Reference: d.Reference, Type: d.CFEType, IssueDate: day, Currency: d.Currency,
		TotalMinor: d.AmountMinor, Addendum: fiscal.Addendum(d.SourceKind, d.SourceRef, d.Kind), Rates: e.vatRates(day),
	}
	if err := json.Unmarshal(d.Buyer, &doc.Buyer); err != nil {
		return doc, hold{}, fmt.Errorf("buyer of document %d: %w", d.ID, err)
	}
	if err := unmarshalLines(d, &doc); err != nil {
		return doc, hold{}, err
	}
	if d.Status == fiscal.StatusPendingDGI {
		// A document the provider already holds is only looked up.
		return doc, hold{}, nil
	}
	if d.OriginalSourceRef != nil {
		inv, h, err := e.invoiceOf(ctx, d, now)
		if err != nil || h != (hold{}) {
			return doc, h, err
		}
		doc.Original = &fiscal.OriginalRef{Type: inv.CFEType, Series: deref(inv.ProviderSeries),
			Number: deref(inv.ProviderNumber), Date: deref(inv.IssueDate)}
	}
	h, err := e.withRate(ctx, d, &doc)
	if err == nil && h == (hold{}) {
		e.placed(ctx, d.ID, &doc)
	}
	return doc, h, err
}

// withRate sets doc's exchange rate when it is not in UYU (exchangeRate),
// or says why it cannot be sent yet. A source that keeps failing opens the
// same case as a missing rate once d has been tried RefusedCaseAfter times,
// rather than waiting in silence.
func (e *Emitter) withRate(ctx context.Context, d store.Document, doc *fiscal.Document) (hold, error) {
	if d.Currency == "UYU" {
		return hold{}, nil
	}
	milli, missing, err := e.exchangeRate(ctx, d, doc.IssueDate)
	if err != nil && int(d.Attempts) >= max(e.cfg.RefusedCaseAfter, 1) { // Attempts counts this claim
		missing, err = "no exchange rate source answered: "+err.Error(), nil
	}
	if err != nil || missing != "" {
		return hold{rate: missing}, err
	}
	doc.ExchangeRate = milli
	return hold{}, nil
}

// unmarshalLines reads d's lines into doc.
func unmarshalLines(d store.Document, doc *fiscal.Document) error {
	if err := json.Unmarshal(d.Lines, &doc.Lines); err != nil {
		return fmt.Errorf("lines of document %d: %w", d.ID, err)
	}
	return nil
}

// invoiceOf returns the authorized invoice credit note d corrects, or why d
// must wait or be parked.
func (e *Emitter) invoiceOf(ctx context.Context, d store.Document, now time.Time) (store.Document, hold, error) {
	payment := *d.OriginalSourceRef
	inv, err := e.store.InvoiceOf(ctx, payment)
	var h hold
	switch {
	case errkind.Is(err, errkind.NotFound):
		h.wait = "invoice of payment " + payment + " not recorded yet"
	case err != nil:
		return inv, h, fmt.Errorf("invoice of document %d: %w", d.ID, err)
	case !inv.Status.Valid():
		h.wait = "invoice " + inv.Reference + " is " + string(inv.Status) + ", not authorized yet"
	}
	if h.wait != "" {
		if now.Sub(d.CreatedAt) > e.cfg.CreditNoteWait {
			return inv, hold{attention: h.wait + " after waiting " + e.cfg.CreditNoteWait.String()}, nil
		}
		return inv, h, nil
	}
	credited, err := e.store.CreditedUpTo(ctx, payment, d.ID)
	if err != nil {
		return inv, h, fmt.Errorf("credited on payment of document %d: %w", d.ID, err)
	}
	if credited > inv.AmountMinor {
		h.attention = fmt.Sprintf("credit notes would total %s, more than invoice %s (%s)",
			money.FormatMinor(credited), inv.Reference, money.FormatMinor(inv.AmountMinor))
	}
	return inv, h, nil
}
