// Package emit is the emission loop: it claims due documents under a lease
// token and, for each, first asks the provider what it already holds under
// the document's deterministic reference. Only when the provider holds
// nothing (and any earlier ambiguous send has had time to settle) does it
// send. Every result is saved only while the claim is still held.
package emit

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/services/invoicer/internal/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Provider is the e-invoicing provider as the emitter needs it.
type Provider interface {
	Lookup(ctx context.Context, reference string) ([]fiscal.Held, error)
	Emit(ctx context.Context, doc fiscal.Document) (fiscal.Held, error)
}

// Config tunes the loop.
type Config struct {
	Batch   int           // documents claimed per round
	Lease   time.Duration // how long a claim lasts; longer than a provider call
	Poll    time.Duration // fallback wake-up period
	Settle  time.Duration // wait after an ambiguous send before looking again
	Retry   backoff.Policy
	DGIPoll backoff.Policy // re-checks of documents pending at DGI
}

// Emitter sends recorded documents to the provider exactly once.
type Emitter struct {
	queries  *store.Queries
	provider Provider
	refused  func(error) bool
	log      *zap.Logger
	cfg      Config
	outcomes *prometheus.CounterVec
}

// New returns an emitter. refused tells a send error that proves the
// provider did not act (safe to send again) from an ambiguous one; anything
// it does not recognise is treated as ambiguous.
func New(q *store.Queries, p Provider, refused func(error) bool, log *zap.Logger, reg prometheus.Registerer, cfg Config) *Emitter {
	e := &Emitter{queries: q, provider: p, refused: refused, log: log, cfg: cfg,
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_invoicer_emission_outcomes_total", Help: "Emission attempts by outcome.",
		}, []string{"outcome"})}
	reg.MustRegister(e.outcomes)
	return e
}

// Run emits due documents until ctx ends.
func (e *Emitter) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		n, err := e.Round(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("emission round failed", zap.Error(err))
		}
		if n == e.cfg.Batch {
			continue
		}
		select {
		case <-ctx.Done():
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
		res := e.work(inHand, d)
		e.outcomes.WithLabelValues(res.outcome).Inc()
		e.save(inHand, d, token, res)
	}
	return len(docs), nil
}
