// Package emit is the emission loop: it claims due documents under a lease
// token and, for each, first asks the provider what it already holds under
// the document's deterministic reference. Only when the provider holds
// nothing (and any earlier ambiguous send has had time to settle) does it
// send. Every result is saved only while the claim is still held and the
// status is still the one claimed.
//
// With a provider that can neither be looked up nor deduplicates (Config.Blind)
// nothing is looked up, and an ambiguous send parks the document in
// needs_attention instead of risking a second document.
package emit

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Provider is the e-invoicing provider as the emitter needs it.
type Provider interface {
	Lookup(ctx context.Context, reference string) ([]fiscal.Held, error)
	Emit(ctx context.Context, doc fiscal.Document) (fiscal.Held, error)
}

// Config tunes the loop.
type Config struct {
	Batch          int           // documents claimed per round
	Lease          time.Duration // how long a claim lasts; longer than a provider call
	Poll           time.Duration // wake-up period when nothing was due
	Settle         time.Duration // wait after an ambiguous send before looking again
	Retry          backoff.Policy
	DGIPoll        backoff.Policy // re-checks of documents pending at DGI
	Summary        fiscal.DailySummary
	CreditNoteWait time.Duration // how long a credit note may wait for its invoice
	// Blind: the provider has neither look-up nor idempotency. Nothing is
	// looked up and an ambiguous send goes to needs_attention.
	Blind bool
	// Wake tells the relay a notification was committed; nil waits for
	// its poll.
	Wake func()
}

// Emitter sends recorded documents to the provider exactly once.
type Emitter struct {
	pool     *pgxpool.Pool
	queries  *store.Queries
	provider Provider
	refused  func(error) bool
	// idempotent: the provider deduplicates by reference, so a resend
	// after an unknown outcome needs no settle window.
	idempotent bool
	log        *zap.Logger
	cfg        Config
	outcomes   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	fenced     prometheus.Counter
	due        chan struct{} // a document was recorded: wake one idle worker
}

// New returns an emitter. refused tells a send error that proves the
// provider did not act (safe to send again) from an ambiguous one; anything
// it does not recognise is treated as ambiguous. A provider with an
// Idempotent method that returns true deduplicates by reference, so after an
// unknown outcome it is sent to again without waiting for the settle window.
func New(pool *pgxpool.Pool, p Provider, refused func(error) bool, log *zap.Logger, reg prometheus.Registerer, cfg Config) *Emitter {
	e := &Emitter{pool: pool, queries: store.New(pool), provider: p, refused: refused, log: log, cfg: cfg, due: make(chan struct{}, 1),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_invoicer_emission_outcomes_total", Help: "Emission attempts by outcome.",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "onceflow_invoicer_provider_call_seconds", Help: "Provider call latency by operation (lookup, emit, status) and result.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12),
		}, []string{"operation", "result"}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_invoicer_results_refused_total", Help: "Attempt results refused because the lease or status changed meanwhile.",
		}),
	}
	if i, ok := p.(interface{ Idempotent() bool }); ok {
		e.idempotent = i.Idempotent()
	}
	reg.MustRegister(e.outcomes, e.latency, e.fenced)
	return e
}

// Due tells the emission loop a document was recorded, so an idle worker
// claims it now instead of at its next poll; it never blocks.
func (e *Emitter) Due() {
	select {
	case e.due <- struct{}{}:
	default:
	}
}

// Run emits due documents until ctx ends.
func (e *Emitter) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		httpserver.Beat(ctx)
		n, err := e.Round(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("emission round failed", zap.Error(err))
		}
		if n == e.cfg.Batch {
			continue
		}
		select {
		case <-ctx.Done():
		case <-e.due:
		case <-time.After(e.cfg.Poll):
		}
	}
	return nil
}

// Round claims one batch of due documents and works each; it returns how
// many it claimed.
func (e *Emitter) Round(ctx context.Context) (int, error) {
	token := uuid.New()
	docs, err := e.queries.DocumentClaimDue(ctx, &token, e.cfg.Lease.Seconds(), int32(e.cfg.Batch))
	if err != nil {
		return 0, fmt.Errorf("claim documents: %w", err)
	}
	// A document in hand is finished even when shutdown begins: cancelling a
	// send half way would turn a clean outcome into an ambiguous one. The
	// provider client's timeout bounds the wait. Documents not yet started
	// are left; their claims expire and another worker takes them.
	inHand := context.WithoutCancel(ctx)
	for _, d := range docs {
		if ctx.Err() != nil {
			break
		}
		// Each document gets a full lease from the moment work on it starts,
		// however long the earlier ones in the batch took.
		if n, err := e.queries.DocumentRenewLease(inHand, e.cfg.Lease.Seconds(), d.ID, &token); err != nil || n == 0 {
			e.log.Warn("claim lost before work started", zap.Int64("document", d.ID), zap.Error(err))
			continue
		}
		e.handle(inHand, d, token)
	}
	return len(docs), nil
}

// handle works one claimed document and saves the result, in a span that
// continues the trace of the payment the document is for.
func (e *Emitter) handle(ctx context.Context, d store.InvoicerFiscalDocument, token uuid.UUID) {
	ctx, span := tracing.Tracer().Start(tracing.WithTraceparent(ctx, d.Traceparent), "document.emit",
		trace.WithAttributes(attribute.String("onceflow.reference", d.Reference), attribute.String("onceflow.status", d.Status)))
	defer span.End()
	c := &calls{}
	res := e.work(ctx, d, token, c)
	span.SetAttributes(attribute.String("onceflow.outcome", res.outcome))
	e.outcomes.WithLabelValues(res.outcome).Inc()
	e.save(ctx, d, token, res, c)
}
