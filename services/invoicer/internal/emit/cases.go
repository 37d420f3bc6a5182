package emit

import (
	"context"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// openCases opens, in the transaction that saves the results, the case each
// saved result calls for (docs/cases.md): a rejected document, a send the
// provider refused RefusedCaseAfter times in a row, a document parked in
// needs_attention, a foreign-currency document without an exchange rate for
// its date. A fenced result opens nothing.
func (e *Emitter) openCases(ctx context.Context, tx *store.Tx, jobs []*job, saved []store.Result, fenced []error) error {
	for i, j := range jobs {
		if fenced[i] != nil {
			continue
		}
		c, ok := e.caseFor(j, saved[i])
		if !ok {
			continue
		}
		if _, err := tx.OpenCase(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// caseFor returns the case j's saved result p calls for, if any.
func (e *Emitter) caseFor(j *job, p store.Result) (store.Case, bool) {
	r, d := j.res, j.d
	switch {
	case r.status == fiscal.StatusRejected && d.Status != fiscal.StatusRejected:
		return store.RejectedCase(d, deref(p.ProviderStatus)), true
	case r.status == fiscal.StatusNeedsAttention && d.Status != fiscal.StatusNeedsAttention:
		return store.DocumentCase(cases.NeedsAttention, d, map[string]any{
			"outcome": r.outcome, "document_status": string(d.Status), "attempts": d.Attempts, "reason": clip(r.attention)}), true
	case r.outcome == "exchange_rate_missing":
		return store.DocumentCase(cases.ExchangeRateMissing, d, map[string]any{
			"currency": d.Currency, "reason": clip(r.lastError), "attempts": d.Attempts}), true
	case p.Refused && d.Refusals+1 >= int32(e.cfg.RefusedCaseAfter):
		return store.DocumentCase(cases.DocumentRefused, d, map[string]any{
			"outcome": r.outcome, "refusals": d.Refusals + 1, "document_status": string(d.Status), "attempts": d.Attempts}), true
	}
	return store.Case{}, false
}

// clip bounds a reason kept as evidence. Attention reasons name references,
// types, amounts and addenda, never buyer data.
func clip(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}
