package fiscal

import (
	"errors"
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
	// limitMinor is the threshold in minor units of UYU (threshold UI ×
	// UYU per UI × 100), exact.
	limitMinor *big.Rat
}

// NewDailySummary returns the rule for e-Tickets under thresholdUI Unidades
// Indexadas at uiRate UYU per UI (a decimal such as "6.4123"). The error
// names the bad value.
func NewDailySummary(polls int, thresholdUI int64, uiRate string) (DailySummary, error) {
	rate, ok := new(big.Rat).SetString(uiRate)
	switch {
	case polls < 1:
		return DailySummary{}, fmt.Errorf("polls %d: want at least 1", polls)
	case thresholdUI <= 0:
		return DailySummary{}, fmt.Errorf("threshold %d UI: want a positive number", thresholdUI)
	case !ok || rate.Sign() <= 0:
		return DailySummary{}, errors.New("UI rate " + uiRate + ": want a positive decimal such as 6.4123")
	}
	limit := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(thresholdUI*100))
	return DailySummary{Polls: polls, limitMinor: limit}, nil
}

// Covers reports whether a document of type t for amountMinor of currency is
// small enough to travel only in the daily report: an e-Ticket or its
// credit note, in UYU, under the threshold. Documents in other currencies
// are never covered (their UI value needs an exchange rate onceflow does
// not keep), nor is anything when the rule is the zero value.
func (s DailySummary) Covers(t CFEType, currency string, amountMinor int64) bool {
	if s.limitMinor == nil || currency != "UYU" || (t != ETicket && t != ETicketCreditNote) {
		return false
	}
	return new(big.Rat).SetInt64(amountMinor).Cmp(s.limitMinor) < 0
}

// Due reports whether a covered document pending after polls checks is now
// considered issued.
func (s DailySummary) Due(polls int32, t CFEType, currency string, amountMinor int64) bool {
	return int(polls) >= s.Polls && s.Covers(t, currency, amountMinor)
}
