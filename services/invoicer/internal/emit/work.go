package emit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/services/invoicer/internal/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// result is what one attempt decided for a document.
type result struct {
	outcome      string        // metric label
	status       fiscal.Status // the document's next status
	held         *fiscal.Held  // the provider's copy, when known
	after        time.Duration // when to look at it again, if not final
	unknownSince *time.Time
	dgiPolls     int32
	lastError    string
	attention    string
}

// work runs one attempt for d: look up, then adopt, flag, wait or send.
func (e *Emitter) work(ctx context.Context, d store.InvoicerFiscalDocument) result {
	doc, wait, err := e.document(ctx, d)
	if err != nil {
		return e.retry(d, "build_failed", err)
	}
	if wait != "" {
		return result{outcome: "waiting_for_invoice", status: fiscal.Status(d.Status), after: e.cfg.Retry.Delay(int(d.Attempts)), unknownSince: d.UnknownSince, dgiPolls: d.DgiPolls, lastError: wait}
	}
	held, err := e.lookup(ctx, d, doc.Reference)
	if err != nil {
		return e.retry(d, "lookup_failed", err)
	}
	verdict, match, reason := fiscal.Classify(doc, held)
	switch verdict {
	case fiscal.VerdictAdopt:
		return e.adopt(d, match)
	case fiscal.VerdictConflict:
		return result{outcome: "needs_attention", status: fiscal.StatusNeedsAttention, attention: reason, unknownSince: d.UnknownSince}
	}
	if d.UnknownSince != nil && time.Since(*d.UnknownSince) < e.cfg.Settle {
		return result{outcome: "settling", status: fiscal.StatusUnknown, unknownSince: d.UnknownSince,
			after: time.Until(d.UnknownSince.Add(e.cfg.Settle))}
	}
	return e.send(ctx, d, doc)
}

// adopt takes the provider's state as ours; a document still pending at DGI
// is looked at again with a growing interval.
func (e *Emitter) adopt(d store.InvoicerFiscalDocument, h fiscal.Held) result {
	r := result{outcome: "adopted", status: h.Status, held: &h, dgiPolls: d.DgiPolls}
	if h.Status == fiscal.StatusPendingDGI || h.Status == fiscal.StatusUnknown || h.Status == "" {
		r.status = fiscal.StatusPendingDGI
		r.dgiPolls = d.DgiPolls + 1
		r.after = e.cfg.DGIPoll.Ceiling(int(r.dgiPolls))
	}
	return r
}

func (e *Emitter) send(ctx context.Context, d store.InvoicerFiscalDocument, doc fiscal.Document) result {
	start := time.Now()
	h, err := e.provider.Emit(ctx, doc)
	e.attempt(ctx, d.ID, "emit", start, err)
	switch {
	case err == nil:
		r := e.adopt(d, h)
		r.outcome = "sent"
		return r
	case errors.Is(err, fiscal.ErrInvalidDocument):
		return result{outcome: "invalid", status: fiscal.StatusNeedsAttention, attention: err.Error()}
	case e.refused(err):
		return e.retry(d, "refused", err)
	default:
		now := time.Now()
		return result{outcome: "unknown", status: fiscal.StatusUnknown, unknownSince: &now, after: e.cfg.Settle, lastError: err.Error()}
	}
}

func (e *Emitter) lookup(ctx context.Context, d store.InvoicerFiscalDocument, ref string) ([]fiscal.Held, error) {
	start := time.Now()
	held, err := e.provider.Lookup(ctx, ref)
	e.attempt(ctx, d.ID, "lookup", start, err)
	return held, err
}

// retry keeps the document's status and tries again after a backoff.
func (e *Emitter) retry(d store.InvoicerFiscalDocument, outcome string, err error) result {
	return result{outcome: outcome, status: fiscal.Status(d.Status), after: e.cfg.Retry.Delay(int(d.Attempts)),
		unknownSince: d.UnknownSince, dgiPolls: d.DgiPolls, lastError: err.Error()}
}

// document rebuilds what is sent from the row. A credit note needs its
// invoice authorized first, since it references the invoice's series and
// number; until then wait names what it waits for.
func (e *Emitter) document(ctx context.Context, d store.InvoicerFiscalDocument) (doc fiscal.Document, wait string, err error) {
	doc = fiscal.Document{
		Reference: d.Reference, Type: fiscal.CFEType(d.CfeType), IssueDate: time.Now().In(uruguay), Currency: d.Currency,
		TotalMinor: d.AmountMinor, Addendum: fiscal.Addendum(d.SourceKind, d.SourceRef, fiscal.Kind(d.Kind)),
	}
	if err := json.Unmarshal(d.Buyer, &doc.Buyer); err != nil {
		return doc, "", fmt.Errorf("buyer of document %d: %w", d.ID, err)
	}
	if err := json.Unmarshal(d.Lines, &doc.Lines); err != nil {
		return doc, "", fmt.Errorf("lines of document %d: %w", d.ID, err)
	}
	if d.OriginalSourceRef == nil {
		return doc, "", nil
	}
	inv, err := e.queries.DocumentGetInvoiceOf(ctx, *d.OriginalSourceRef)
	if errors.Is(err, pgx.ErrNoRows) {
		return doc, "invoice of payment " + *d.OriginalSourceRef + " not recorded yet", nil
	}
	if err != nil {
		return doc, "", fmt.Errorf("invoice of document %d: %w", d.ID, err)
	}
	if s := fiscal.Status(inv.Status); s != fiscal.StatusAuthorized && s != fiscal.StatusIssued {
		return doc, "invoice " + inv.Reference + " is " + inv.Status + ", not authorized yet", nil
	}
	doc.Original = &fiscal.OriginalRef{Type: fiscal.CFEType(inv.CfeType), Series: deref(inv.ProviderSeries), Number: deref(inv.ProviderNumber), Date: deref(inv.IssueDate)}
	return doc, "", nil
}

// uruguay is the issuer's time zone (UTC-3, no daylight saving since 2015):
// a document is dated by the Montevideo calendar, not the server's.
var uruguay = time.FixedZone("UYT", -3*60*60)

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
