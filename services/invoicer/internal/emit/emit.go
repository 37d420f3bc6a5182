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
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
	"github.com/onceflow/onceflow/provider/rates"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Provider is the e-invoicing provider as the emitter needs it. Its errors
// wrap fiscal.ErrRefused when the provider surely did not act (safe to send
// again); any other send error is treated as ambiguous. Idempotent reports
// whether it deduplicates sends by reference, so that after an unknown
// outcome the document is sent again without waiting for the settle window.
type Provider interface {
	Lookup(ctx context.Context, reference string) ([]fiscal.Held, error)
	Emit(ctx context.Context, doc fiscal.Document) (fiscal.Held, error)
	Idempotent() bool
}

// ManyLookup is a Provider that also looks up several references in one
// call, returning every document held under any of them. The loop asks it
// about the documents of a round that no send can have reached (see fresh),
// so a provider that ignored part of the request could at worst make one
// look like none, which it is unless another system used its reference.
type ManyLookup interface {
	LookupReferences(ctx context.Context, references []string) ([]fiscal.Held, error)
}

// Config tunes the loop.
type Config struct {
	Batch       int           // documents claimed per round
	Workers     int           // claimed batches worked at once by Run (0: one)
	Sends       int           // of a round's documents, how many a worker sends at once (0: one after another)
	Lease       time.Duration // how long a claim lasts; more than two provider calls
	CallTimeout time.Duration // bound on one provider call (0: only Lease counts)
	Poll        time.Duration // wake-up period when nothing was due
	Linger      time.Duration // wait after a wake-up before claiming (worker.ClaimThenWork)
	Settle      time.Duration // wait after an ambiguous send before looking again
	Retry       backoff.Policy
	DGIPoll     backoff.Policy // re-checks of documents pending at DGI
	Summary     fiscal.DailySummary
	// VAT are the VAT rates by effective date; nil is vat.DefaultSchedule.
	VAT vat.Schedule
	// Rates gives exchange rates and the UI's value by date; nil means
	// none is known (foreign-currency documents wait with a case, and no
	// e-Ticket is treated as small).
	Rates          rates.Source
	CreditNoteWait time.Duration // how long a credit note may wait for its invoice
	// RefusedCaseAfter is how many consecutive refusals of a send open a
	// document_refused case; the document is still retried with backoff.
	RefusedCaseAfter int
	// Blind: the provider has neither look-up nor idempotency. Nothing is
	// looked up and an ambiguous send goes to needs_attention.
	Blind bool
	// Wake tells the relay a notification was committed; nil waits for
	// its poll.
	Wake func()
	// Valid measures documents becoming valid (nil: not measured).
	Valid *notify.Valid
	// Handoff holds the documents this process recorded claimed for the
	// loop (store.Handoff); nil: every document is claimed from the table.
	Handoff *store.Handoff
	// Clock is the pod's clock; nil is time.Now. The loop only measures
	// durations with it; every time it compares with a document's is the
	// database's (see dbClock). Tests skew it.
	Clock func() time.Time
}

// now reads the pod's clock.
func (c Config) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock()
}

// Emitter sends recorded documents to the provider exactly once.
type Emitter struct {
	store    *store.Store
	provider Provider
	many     ManyLookup // the provider's look-up of several references; nil without one
	// idempotent: the provider deduplicates by reference, so a resend
	// after an unknown outcome needs no settle window.
	idempotent bool
	log        *zap.Logger
	cfg        Config
	outcomes   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	fenced     prometheus.Counter
	claimed    prometheus.Histogram // documents per claim, empty ones included
	due        chan struct{}        // a document was recorded: wake one idle worker
	// tableClaimed is when the last claim from the table began, by the
	// pod's clock; only the claiming loop reads and writes it.
	tableClaimed time.Time
}

// New returns an emitter that works the documents of st, sending through p
// (see Provider).
func New(st *store.Store, p Provider, log *zap.Logger, reg prometheus.Registerer, cfg Config) *Emitter {
	e := &Emitter{store: st, provider: p, idempotent: p.Idempotent(), log: log, cfg: cfg, due: make(chan struct{}, 1),
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
		claimed: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "onceflow_invoicer_emit_claimed_documents", Help: "Documents each claim of an emission worker took, 0 when a wake-up or a poll found none.",
			Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100},
		}),
	}
	reg.MustRegister(e.outcomes, e.latency, e.fenced, e.claimed)
	e.many, _ = p.(ManyLookup)
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

// Run emits due documents until ctx ends: one loop claims batches, and
// up to Config.Workers of them are worked at once (worker.ClaimThenWork).
func (e *Emitter) Run(ctx context.Context) error {
	if e.cfg.Handoff != nil {
		defer e.releaseHandoff(ctx)
	}
	worker.ClaimThenWork(ctx, e.due, e.cfg.Poll, e.cfg.Linger, max(e.cfg.Workers, 1), func(ctx context.Context) (func(), bool) {
		c, err := e.claim(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("emission claim failed", zap.Error(err))
		}
		if len(c.docs) == 0 {
			return nil, false
		}
		return func() { e.process(ctx, c) }, len(c.docs) == e.cfg.Batch || e.cfg.Handoff != nil && e.cfg.Handoff.Len() > 0
	})
	return nil
}

// releaseHandoff stops the handoff and ends the claims of the documents it
// still holds (handoff.Handoff.Stop).
func (e *Emitter) releaseHandoff(ctx context.Context) {
	n, err := e.cfg.Handoff.Stop(ctx, e.store.ReleaseHandoff)
	if err != nil {
		e.log.Warn("release the handoff's documents: they are claimed again when their lease ends", zap.Error(err))
		return
	}
	e.log.Info("released the handoff's documents", zap.Int64("documents", n))
}

// Round claims one batch of due documents, works each and saves every
// result; it returns how many it claimed. The batch shares its commits: one
// marks every document about to be sent, one saves every result.
func (e *Emitter) Round(ctx context.Context) (int, error) {
	c, err := e.claim(ctx)
	if err != nil {
		return 0, err
	}
	e.process(ctx, c)
	return len(c.docs), nil
}

// claim is one claimed batch: its documents, the claim's token, when it
// was taken by the pod's clock and the database's clock from then on.
type claim struct {
	docs    []store.Document
	token   uuid.UUID
	claimed time.Time
	clock   dbClock
}

// claim takes a batch from the handoff or, when it is empty or the table
// has not been claimed from for a poll period, claims one from the table
// (falling back on the handoff when the table has none): documents due
// again, and those whose claim lapsed, wait there however busy the
// handoff keeps the loop. It counts the batch's size.
func (e *Emitter) claim(ctx context.Context) (claim, error) {
	// Taken before the claim, so the time measured from it is never less
	// than the time the claim's lease has really run.
	token, claimed := uuid.New(), e.cfg.now()
	if claimed.Sub(e.tableClaimed) < e.cfg.Poll {
		if c, ok := e.handedOff(); ok {
			return c, nil
		}
	}
	e.tableClaimed = claimed
	got, err := e.store.ClaimDue(ctx, token, e.cfg.Lease, int32(e.cfg.Batch))
	if err != nil {
		return claim{}, err
	}
	if len(got.Documents) == 0 {
		if c, ok := e.handedOff(); ok {
			return c, nil
		}
	}
	e.claimed.Observe(float64(len(got.Documents)))
	return claim{docs: got.Documents, token: token, claimed: claimed, clock: e.dbClock(got.Now)}, nil
}

// handedOff takes a batch from the handoff, if there is one and it holds
// any, and counts its size. Its claim's time is when the oldest's lease
// began, and its database clock the one read when that was recorded; the
// handoff measured both with time.Now, so they are carried over to the
// pod's clock as the time since.
func (e *Emitter) handedOff() (claim, bool) {
	if e.cfg.Handoff == nil {
		return claim{}, false
	}
	got, at := e.cfg.Handoff.Take(e.cfg.Batch)
	if len(got) == 0 {
		return claim{}, false
	}
	docs := make([]store.Document, len(got))
	for i, h := range got {
		docs[i] = h.Document
	}
	e.claimed.Observe(float64(len(docs)))
	now := e.cfg.now()
	return claim{docs: docs, token: e.cfg.Handoff.Token(), claimed: now.Add(-time.Since(at)),
		clock: dbClock{at: got[0].DBNow, local: now.Add(-time.Since(got[0].Recorded)), pod: e.cfg.now}}, true
}

// process works each document of c and saves every result. The fresh
// documents' look-ups are made together, in one call, once the others'
// are done.
func (e *Emitter) process(ctx context.Context, c claim) {
	// A document in hand is finished even when shutdown begins: cancelling a
	// send half way would turn a clean outcome into an ambiguous one. The
	// provider client's timeout bounds the wait. Documents not yet started
	// are left; their claims expire and another worker takes them.
	inHand := context.WithoutCancel(ctx)
	var jobs, fresh []*job
	for _, d := range c.docs {
		if ctx.Err() != nil {
			break
		}
		if !e.leased(inHand, d, c.token, c.claimed) {
			continue
		}
		j := e.start(inHand, d)
		jobs = append(jobs, j)
		if !e.fresh(d) {
			j.res, j.doc = e.work(j.ctx, d, c.clock.now(), &j.calls)
			continue
		}
		if j.res, j.doc = e.prepare(j.ctx, d, c.clock.now()); j.doc != nil {
			fresh = append(fresh, j)
		}
	}
	e.lookUpTogether(inHand, fresh, c.clock)
	e.sendAll(ctx, inHand, jobs, c.token)
	e.saveAll(inHand, jobs, c.token)
}

// leased reports whether d's claim holds with enough lease left for the
// next step on it (its look-up, or its send). A claim younger than
// renewAfter is trusted without a commit; an older one is renewed first,
// and a renewal that finds it lost skips d.
// A young claim lost meanwhile (a provider event or an operator moved d) is
// caught later: the send marker and the result are written only under the
// token and the claimed status, so d is at most looked up, never sent.
func (e *Emitter) leased(ctx context.Context, d store.Document, token uuid.UUID, claimed time.Time) bool {
	if e.cfg.now().Sub(claimed) < e.cfg.renewAfter() {
		return true
	}
	held, err := e.store.RenewLease(ctx, d.ID, token, e.cfg.Lease)
	if err != nil || !held {
		e.log.Warn("claim lost: the document is left to whoever holds it now", zap.Int64("document", d.ID), zap.Error(err))
		return false
	}
	return true
}

// dbClock reads the database's clock: its time at a round's claim, moved on
// by the time the pod has measured since. A duration measured on the pod's
// (monotonic) clock is right however far its wall clock is off, so the
// loop never compares a pod's time with one the database wrote.
type dbClock struct {
	at    time.Time // the database's time at the claim
	local time.Time // the pod's time once the claim had returned
	pod   func() time.Time
}

// dbClock starts a dbClock at the database's time at, just read.
func (e *Emitter) dbClock(at time.Time) dbClock {
	return dbClock{at: at, local: e.cfg.now(), pod: e.cfg.now}
}

// now is the database's time now, never ahead of it: the claim's time was
// read before the pod's.
func (c dbClock) now() time.Time { return c.at.Add(c.pod().Sub(c.local)) }

// renewAfter is how old a claim may be and still serve a document without
// a renewal: every document starts with at least two thirds of the lease
// ahead of it, and never less than a look-up and a send (two provider
// calls; the configuration requires a lease longer than that).
func (c Config) renewAfter() time.Duration {
	return min(c.Lease/3, c.Lease-2*c.CallTimeout)
}

// start opens d's job, in a span that continues the trace of the payment
// the document is for; finish ends it.
func (e *Emitter) start(ctx context.Context, d store.Document) *job {
	ctx, span := tracing.Tracer().Start(tracing.WithTraceparent(ctx, d.Traceparent), "document.emit",
		trace.WithAttributes(attribute.String("onceflow.reference", d.Reference), attribute.String("onceflow.status", string(d.Status))))
	return &job{ctx: ctx, span: span, d: d}
}
