package fiscal

import (
	"fmt"
	"math/big"
)

// DailySummary is the rule for small e-Tickets that DGI does not answer
// individually and only receives in the issuer's daily report: after Polls
// status checks without an individual answer such a document is considered
// issued. Amounts are compared exactly, never through floats.
type DailySummary struct {
	// Polls is how many pending answers make a small e-Ticket issued.
	Polls int
	// ThresholdUI is the e-Ticket threshold in Unidades Indexadas.
	ThresholdUI int64
}

// NewDailySummary returns the rule for e-Tickets at or under thresholdUI
// Unidades Indexadas. The error names the bad value.
func NewDailySummary(polls int, thresholdUI int64) (DailySummary, error) {
	switch {
	case polls < 1:
		return DailySummary{}, fmt.Errorf("polls %d: want at least 1", polls)
	case thresholdUI <= 0:
		return DailySummary{}, fmt.Errorf("threshold %d UI: want a positive number", thresholdUI)
	}
	return DailySummary{Polls: polls, ThresholdUI: thresholdUI}, nil
}

// Small is what the rule needs of a document: its type, its amount
// excluding VAT (vat.Totals.ExcludingVAT) in minor units of its currency,
// the exchange rate to UYU in thousandths (1000 for UYU), and the UI's
// value in UYU on the document's date (nil when unknown).
type Small struct {
	Type          CFEType
	ExcludingVAT  int64
	ExchangeMilli int64
	UI            *big.Rat
}

// Covers reports whether the document is small enough to travel only in
// the daily report: an e-Ticket or its credit note whose amount excluding
// VAT, in UYU at its exchange rate, is at or under the threshold in UI at
// the UI's value on its date, in any currency. Without an exchange rate or
// a UI value nothing is covered (the document is only checked for longer),
// nor is anything when the rule is the zero value.
func (s DailySummary) Covers(d Small) bool {
	return s.Place(d) == ThresholdAtOrUnder
}

// Place says where d, an e-Ticket or its credit note, stands against the
// threshold: its amount excluding VAT in UYU at its exchange rate against
// the threshold in UI at the UI's value on its date. Anything else, a
// missing exchange rate or UI value, or the zero rule, is
// ThresholdUnknown.
func (s DailySummary) Place(d Small) Threshold {
	if s.ThresholdUI <= 0 || (d.Type != ETicket && d.Type != ETicketCreditNote) ||
		d.ExchangeMilli <= 0 || d.UI == nil || d.UI.Sign() <= 0 {
		return ThresholdUnknown
	}
	uyu := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(d.ExcludingVAT), big.NewInt(d.ExchangeMilli)), big.NewInt(100_000))
	limit := new(big.Rat).Mul(d.UI, new(big.Rat).SetInt64(s.ThresholdUI))
	if uyu.Cmp(limit) <= 0 {
		return ThresholdAtOrUnder
	}
	return ThresholdAbove
}

// Due reports whether a document pending after polls checks is now
// considered issued: enough polls, and covered.
func (s DailySummary) Due(polls int32, d Small) bool {
	return s.Polls > 0 && int(polls) >= s.Polls && s.Covers(d)
}
