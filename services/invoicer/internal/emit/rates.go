package emit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
	"github.com/onceflow/onceflow/provider/rates"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// exchangeRate returns d's exchange rate in thousandths, fixing it on d
// from Config.Rates by the document's date the first time (every later
// attempt sends the rate fixed then). missing, when set, says no source
// has a rate for that date: d waits and a case is opened, nothing is
// guessed. An error means a source could not be asked.
func (e *Emitter) exchangeRate(ctx context.Context, d store.Document, day time.Time) (milli int64, missing string, err error) {
	if d.ExchangeRateMilli != nil {
		return *d.ExchangeRateMilli, "", nil
	}
	if e.cfg.Rates == nil {
		return 0, "no exchange rate source is configured", nil
	}
	v, err := e.cfg.Rates.Rate(ctx, d.Currency, day)
	switch {
	case errors.Is(err, rates.ErrMissing):
		return 0, "no exchange rate for " + d.Currency + " on " + day.Format(time.DateOnly), nil
	case err != nil:
		return 0, "", fmt.Errorf("exchange rate of %s: %w", d.Currency, err)
	}
	milli = rates.Thousandths(v)
	if milli <= 0 || milli > fiscal.MaxExchangeRate {
		return 0, fmt.Sprintf("the exchange rate of %s on %s, %s, is outside what a CFE can carry", d.Currency, day.Format(time.DateOnly), v.FloatString(6)), nil
	}
	milli, err = e.store.FixExchangeRate(ctx, d.ID, milli)
	return milli, "", err
}

// small describes d for the daily-summary rule: its amount excluding VAT
// (its lines at the rates of its date), its exchange rate and the UI's
// value on its date. What cannot be known is left zero, which the rule
// never covers.
func (e *Emitter) small(ctx context.Context, d store.Document, day time.Time) fiscal.Small {
	doc := fiscal.Document{Type: d.CFEType, Currency: d.Currency, IssueDate: day, Rates: e.vatRates(day)}
	if d.ExchangeRateMilli != nil {
		doc.ExchangeRate = *d.ExchangeRateMilli
	}
	if err := unmarshalLines(d, &doc); err != nil {
		return fiscal.Small{}
	}
	return e.smallOf(ctx, d.ID, doc)
}

// smallOf describes doc (document id) for the daily-summary rule and the
// UI threshold: its amount excluding VAT, its exchange rate (1000 in UYU,
// zero when not fixed yet) and the UI's value on its date (nil when no
// source has it).
func (e *Emitter) smallOf(ctx context.Context, id int64, doc fiscal.Document) fiscal.Small {
	s := fiscal.Small{Type: doc.Type, ExchangeMilli: 1000}
	if doc.Currency != "UYU" {
		s.ExchangeMilli = doc.ExchangeRate
	}
	t, err := doc.Totals()
	if err != nil {
		return fiscal.Small{}
	}
	s.ExcludingVAT = t.ExcludingVAT
	if e.cfg.Rates != nil {
		ui, err := e.cfg.Rates.Rate(ctx, rates.UI, doc.IssueDate)
		if err != nil {
			e.log.Warn("no UI value for the document's date", zap.Int64("document", id), zap.Error(err))
			return s
		}
		s.UI = ui
	}
	return s
}

// placed sets doc's place against the e-Ticket threshold when doc is an
// e-Ticket or its credit note whose amount, exchange rate and UI value are
// known (CFEAcimaUI); otherwise it stays unknown and nothing is said.
func (e *Emitter) placed(ctx context.Context, id int64, doc *fiscal.Document) {
	if doc.Type != fiscal.ETicket && doc.Type != fiscal.ETicketCreditNote {
		return
	}
	doc.Threshold = e.cfg.Summary.Place(e.smallOf(ctx, id, *doc))
}

// vatRates are the VAT rates of Config.VAT on day; zero (the default
// schedule's) when none is configured or none applies.
func (e *Emitter) vatRates(day time.Time) (r vat.Rates) {
	if e.cfg.VAT == nil {
		return r
	}
	r, _ = e.cfg.VAT.At(day)
	return r
}

// documentDay is the date a document's rates are taken on: its issue date
// once the provider gave one, otherwise now in Montevideo.
func documentDay(d store.Document, now time.Time) time.Time {
	if d.IssueDate != nil {
		return *d.IssueDate
	}
	return now.In(fiscal.Montevideo)
}
