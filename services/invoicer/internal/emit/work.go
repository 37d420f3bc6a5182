package emit

import (
	"context"
	"errors"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// result is what one attempt decided for a document.
type result struct {
	outcome      string        // metric label
	status       fiscal.Status // the document's next status
	held         *fiscal.Held  // the provider's copy, when known
	after        time.Duration // when to look at it again, if not final
	unknownSince *time.Time
	unknownNow   bool // unknown from now on, by the database's clock
	dgiPolls     int32
	lastError    string
	attention    string
}

// work runs the first half of one attempt for d at now, the database's
// time: look up, then adopt, flag or wait, which decides the result, or
// send, which returns the document to send instead; the round marks and
// sends it (sendAll).
func (e *Emitter) work(ctx context.Context, d store.Document, now time.Time, c *calls) (result, *fiscal.Document) {
	r, doc := e.prepare(ctx, d, now)
	switch {
	case doc == nil:
		return r, nil
	case e.cfg.Blind:
		return e.blind(ctx, d, *doc, now)
	}
	held, err := e.lookup(ctx, d, doc.Reference, c)
	return e.decide(ctx, d, *doc, held, err, now)
}

// prepare builds d's document at now, or decides to hold it (a failed
// build, a credit note blocked or waiting for its invoice, a missing
// exchange rate) and returns that result with no document.
func (e *Emitter) prepare(ctx context.Context, d store.Document, now time.Time) (result, *fiscal.Document) {
	doc, hold, err := e.document(ctx, d, now)
	switch {
	case err != nil:
		return e.retry(d, "build_failed", err), nil
	case hold.attention != "":
		return e.attention(d, "credit_note_blocked", hold.attention), nil
	case hold.rate != "":
		r := e.retry(d, "exchange_rate_missing", errors.New(hold.rate))
		r.after = e.cfg.Retry.Ceiling(int(d.Attempts))
		return r, nil
	case hold.wait != "":
		r := e.retry(d, "waiting_for_invoice", errors.New(hold.wait))
		r.after = e.cfg.Retry.Ceiling(int(d.Attempts))
		return r, nil
	}
	return result{}, &doc
}

// decide takes what the look-up of doc's reference found (held, or its
// error): adopt, flag or wait, which is the result, or send, which returns
// doc to send instead.
func (e *Emitter) decide(ctx context.Context, d store.Document, doc fiscal.Document, held []fiscal.Held, err error, now time.Time) (result, *fiscal.Document) {
	if err != nil {
		return e.retry(d, "lookup_failed", err), nil
	}
	verdict, match, reason := fiscal.Classify(doc, held)
	switch {
	case verdict == fiscal.VerdictAdopt:
		return e.adopt(ctx, d, match, "adopted", now), nil
	case verdict == fiscal.VerdictConflict:
		return e.attention(d, "conflict", reason), nil
	case d.Status == fiscal.StatusPendingDGI:
		return e.attention(d, "lost", "the provider no longer lists document "+d.Reference+" it reported pending at DGI"), nil
	case d.UnknownSince != nil && !e.idempotent && now.Sub(*d.UnknownSince) < e.cfg.Settle:
		return result{outcome: "settling", status: fiscal.StatusUnknown, unknownSince: d.UnknownSince,
			after: d.UnknownSince.Add(e.cfg.Settle).Sub(now), lastError: deref(d.LastError)}, nil
	}
	return result{}, &doc
}

// blind works a document for a provider without look-up: a document pending
// at DGI is only counted (its news comes through provider events), anything
// else is sent once.
func (e *Emitter) blind(ctx context.Context, d store.Document, doc fiscal.Document, now time.Time) (result, *fiscal.Document) {
	switch d.Status {
	case fiscal.StatusPendingDGI:
		return e.pending(ctx, d, result{outcome: "awaiting_provider_event", dgiPolls: d.DGIPolls}, now), nil
	case fiscal.StatusUnknown:
		return e.attention(d, "ambiguous", "an earlier send had an unknown outcome and the provider cannot be looked up"), nil
	}
	if d.UnknownSince != nil {
		return e.attention(d, "ambiguous", "a worker stopped during a send and the provider cannot be looked up"), nil
	}
	return result{}, &doc
}

// adopt takes the provider's state as ours; a document still pending at DGI
// is looked at again with a growing interval.
func (e *Emitter) adopt(ctx context.Context, d store.Document, h fiscal.Held, outcome string, now time.Time) result {
	r := result{outcome: outcome, status: h.Status, held: &h, dgiPolls: d.DGIPolls}
	if h.Status.Final() {
		return r
	}
	if !h.IssueDate.IsZero() {
		d.IssueDate = &h.IssueDate
	}
	return e.pending(ctx, d, r, now)
}

// pending keeps r's document pending at DGI, to be checked again with
// backoff, unless the daily-summary rule now considers it issued (the
// document's amount excluding VAT, in UI on its date, in any currency).
func (e *Emitter) pending(ctx context.Context, d store.Document, r result, now time.Time) result {
	r.status = fiscal.StatusPendingDGI
	r.dgiPolls = d.DGIPolls + 1
	if int(r.dgiPolls) >= e.cfg.Summary.Polls && e.cfg.Summary.Due(r.dgiPolls, e.small(ctx, d, documentDay(d, now))) {
		r.status, r.outcome = fiscal.StatusIssued, "issued_daily_summary"
		return r
	}
	r.after = e.cfg.DGIPoll.Ceiling(int(r.dgiPolls))
	return r
}

// send emits doc, already marked as possibly in flight, and classifies the
// answer. A successful send's answer goes through the checks of a look-up
// (fiscal.Classify): one that is not ours (another type, source or total)
// parks the document for an operator, as a look-up finding it would.
func (e *Emitter) send(ctx context.Context, d store.Document, doc fiscal.Document, c *calls) result {
	start := time.Now()
	held, err := e.provider.Emit(ctx, doc)
	c.add(e.attempt(d.ID, "emit", start, string(held.Status), err))
	switch {
	case err == nil:
		return e.answered(ctx, d, doc, held)
	case errors.Is(err, fiscal.ErrInvalidDocument):
		return e.attention(d, "invalid", err.Error())
	case errors.Is(err, fiscal.ErrUnavailable): // no refusal of the document: its count stays
		return e.retry(d, "unavailable", err)
	case errkind.Is(err, errkind.Refused):
		return e.retry(d, "refused", err)
	case e.cfg.Blind:
		return e.attention(d, "ambiguous", "send outcome unknown and the provider can neither be looked up nor deduplicate: "+err.Error())
	}
	after := e.cfg.Settle
	if e.idempotent {
		after = e.cfg.Retry.Delay(int(d.Attempts))
	}
	return result{outcome: "unknown", status: fiscal.StatusUnknown, unknownNow: true, after: after, lastError: err.Error()}
}

// answered adopts the answer of a successful send when it is ours, and
// otherwise parks d with the reason a look-up would give.
func (e *Emitter) answered(ctx context.Context, d store.Document, doc fiscal.Document, held fiscal.Held) result {
	verdict, match, reason := fiscal.Classify(doc, []fiscal.Held{held})
	if verdict != fiscal.VerdictAdopt {
		return e.attention(d, "conflict", "the send's answer is not ours: "+reason)
	}
	return e.adopt(ctx, d, match, "sent", doc.IssueDate)
}

// attention parks d for an operator.
func (e *Emitter) attention(d store.Document, outcome, reason string) result {
	return result{outcome: outcome, status: fiscal.StatusNeedsAttention, attention: reason,
		unknownSince: d.UnknownSince, dgiPolls: d.DGIPolls, lastError: deref(d.LastError)}
}

// retry keeps the document's status and tries again after a backoff.
func (e *Emitter) retry(d store.Document, outcome string, err error) result {
	return result{outcome: outcome, status: d.Status, after: e.cfg.Retry.Delay(int(d.Attempts)),
		unknownSince: d.UnknownSince, dgiPolls: d.DGIPolls, lastError: err.Error()}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
