package apply

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// PSP is the authoritative source of payments and refunds: a PSP
// adapter (package psp), whichever PSP it speaks to.
type PSP interface {
	Payment(ctx context.Context, id string) (psp.Payment, error)
	Refund(ctx context.Context, id string) (psp.Refund, error)
}

// PSPs are the adapters by the dedupe scope of their sources: a receipt
// is re-fetched from the PSP its scope belongs to.
type PSPs map[string]PSP

// Config tunes the worker.
type Config struct {
	Batch       int           // receipts claimed per round
	Workers     int           // claimed batches worked at once by Run (0: one)
	Lease       time.Duration // how long a claim lasts
	Poll        time.Duration // fallback wake-up period
	Linger      time.Duration // wait after a wake-up before claiming (worker.ClaimThenWork)
	MaxAttempts int           // failures before a receipt is parked
	Backoff     backoff.Policy
	// WakeRelay tells the relay an event was committed; nil leaves it to
	// the relay's poll.
	WakeRelay func()
	// ChargebackCreditNote names the dedupe scopes whose chargebacks of an
	// invoiced payment are credited automatically instead of opening a
	// case.
	ChargebackCreditNote map[string]bool
	// Handoff holds the receipts this process inserted claimed for the
	// worker (store.Handoff); nil: every receipt is claimed from the table.
	Handoff *store.Handoff
}

// Worker applies pending receipts.
type Worker struct {
	store   *store.Store
	psps    PSPs
	log     *zap.Logger
	cfg     Config
	wake    <-chan struct{}
	applied *prometheus.CounterVec
	latency prometheus.Histogram
	claimed prometheus.Histogram
	// tableClaimed is when the last claim from the table began; only the
	// claiming loop reads and writes it.
	tableClaimed time.Time
}

// NewWorker returns a worker; wake nudges it when a receipt arrives.
func NewWorker(st *store.Store, psps PSPs, log *zap.Logger, reg prometheus.Registerer, cfg Config, wake <-chan struct{}) *Worker {
	w := &Worker{store: st, psps: psps, log: log, cfg: cfg, wake: wake,
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_ingest_apply_total", Help: "Receipt apply attempts by outcome (done, rejected, retry, parked, lost: another worker took the receipt over).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "onceflow_ingest_apply_seconds", Help: "Time to apply one receipt, PSP re-fetch and the commit it shares included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		claimed: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "onceflow_ingest_apply_claimed_receipts", Help: "Receipts each claim of the apply worker took, 0 when a wake-up or a poll found none.",
			Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 200},
		})}
	reg.MustRegister(w.applied, w.latency, w.claimed)
	return w
}

// Run applies receipts until ctx ends: one loop claims batches, and up to
// Config.Workers of them are worked at once (worker.ClaimThenWork).
func (w *Worker) Run(ctx context.Context) error {
	if w.cfg.Handoff != nil {
		defer w.releaseHandoff(ctx)
	}
	worker.ClaimThenWork(ctx, w.wake, w.cfg.Poll, w.cfg.Linger, max(w.cfg.Workers, 1), func(ctx context.Context) (func(), bool) {
		c, err := w.claim(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("apply claim failed", zap.Error(err))
		}
		if len(c.rows) == 0 {
			return nil, false
		}
		return func() { w.process(ctx, c) }, len(c.rows) == w.cfg.Batch || w.cfg.Handoff != nil && w.cfg.Handoff.Len() > 0
	})
	return nil
}

// releaseHandoff stops the handoff and ends the claims of the receipts it
// still holds (handoff.Handoff.Stop).
func (w *Worker) releaseHandoff(ctx context.Context) {
	n, err := w.cfg.Handoff.Stop(ctx, w.store.ReleaseHandoff)
	if err != nil {
		w.log.Warn("release the handoff's receipts: they are claimed again when their lease ends", zap.Error(err))
		return
	}
	w.log.Info("released the handoff's receipts", zap.Int64("receipts", n))
}

// Round claims one batch of due receipts and applies it (see process); it
// returns how many it claimed.
func (w *Worker) Round(ctx context.Context) (int, error) {
	c, err := w.claim(ctx)
	if err != nil {
		return 0, err
	}
	w.process(ctx, c)
	return len(c.rows), nil
}

// claim is one claimed batch of receipts, its token and when it was taken.
type claim struct {
	rows    []store.Receipt
	token   uuid.UUID
	claimed time.Time
}

// claim takes a batch from the handoff or, when it is empty or the table
// has not been claimed from for a poll period, claims one from the table
// (falling back on the handoff when the table has none): receipts due
// again after a failure, and those whose claim lapsed, wait there however
// busy the handoff keeps the worker. It counts the batch's size.
func (w *Worker) claim(ctx context.Context) (claim, error) {
	token, claimed := uuid.New(), time.Now()
	if claimed.Sub(w.tableClaimed) < w.cfg.Poll {
		if c, ok := w.handedOff(); ok {
			return c, nil
		}
	}
	w.tableClaimed = claimed
	rows, err := w.store.ClaimReceipts(ctx, token, w.cfg.Lease, w.cfg.Batch)
	if err != nil {
		return claim{}, err
	}
	if len(rows) == 0 {
		if c, ok := w.handedOff(); ok {
			return c, nil
		}
	}
	w.claimed.Observe(float64(len(rows)))
	return claim{rows: rows, token: token, claimed: claimed}, nil
}

// handedOff takes a batch from the handoff, if there is one and it holds
// any, and counts its size.
func (w *Worker) handedOff() (claim, bool) {
	if w.cfg.Handoff == nil {
		return claim{}, false
	}
	rows, at := w.cfg.Handoff.Take(w.cfg.Batch)
	if len(rows) == 0 {
		return claim{}, false
	}
	w.claimed.Observe(float64(len(rows)))
	return claim{rows: rows, token: w.cfg.Handoff.Token(), claimed: at}, true
}

// process prepares the receipts of c all at once (PSP re-fetches and
// checks: a network round trip each, which one after another held a
// batch's last receipt for the sum of them) and records the prepared ones
// in a single transaction. Once half the lease has run (a slow PSP) each
// receipt is recorded as soon as it is prepared, so none is held past its
// lease waiting for the rest of the batch.
func (w *Worker) process(ctx context.Context, c claim) {
	// A receipt in hand is finished even when shutdown begins (the PSP
	// client's timeout bounds its fetch); a batch claimed as it began is
	// left, its claims lapse and another worker takes them.
	if ctx.Err() != nil {
		return
	}
	inHand := context.WithoutCancel(ctx)
	prepared := make(chan *staged)
	for i, r := range c.rows {
		go func() {
			s := w.stage(inHand, r)
			s.pos = i
			prepared <- s
		}()
	}
	var batch []*staged
	for range c.rows {
		s := <-prepared
		if s.err != nil {
			w.settle(inHand, s, c.token)
			continue
		}
		batch = append(batch, s)
		if time.Since(c.claimed) >= w.cfg.Lease/2 {
			w.complete(inHand, inClaimOrder(batch), c.token)
			batch = nil
		}
	}
	w.complete(inHand, inClaimOrder(batch), c.token)
}

// inClaimOrder sorts batch back into the order its receipts were claimed
// in, whatever order their fetches ended in, so the batch writes (and
// should its transaction fail, records each alone) in that order.
func inClaimOrder(batch []*staged) []*staged {
	slices.SortFunc(batch, func(a, b *staged) int { return cmp.Compare(a.pos, b.pos) })
	return batch
}

// complete reads the orders batch's payments await, settles at once the
// receipts that failed so far, records the others and settles them.
func (w *Worker) complete(ctx context.Context, batch []*staged, token uuid.UUID) {
	w.readOrders(ctx, batch)
	ready := batch[:0]
	for _, s := range batch {
		if s.err != nil {
			w.settle(ctx, s, token)
			continue
		}
		ready = append(ready, s)
	}
	w.record(ctx, ready, token)
	for _, s := range ready {
		w.settle(ctx, s, token)
	}
}

// write records a prepared receipt's effects: at once in tx what must be
// read or checked under a lock first, and the rest into r, sent for the
// whole batch together.
type write func(tx *store.Tx, r *records) error

// staged is one claimed receipt on its way: its span, when work on it
// started, and its write (with the second-payment check it needs) or the
// error that stopped it.
type staged struct {
	r     store.Receipt
	pos   int // its place in the claimed batch
	span  trace.Span
	start time.Time
	prepared
	err error
}

// prepared is a prepared receipt: its write with the second-payment check
// it needs or, for a payment, the payment fetched and awaiting its order,
// which the round reads for all its payments at once (readOrders).
type prepared struct {
	write write
	paid  *store.PaidCheck
	order *awaitingOrder
}

// stage prepares r in a span continuing the trace of its delivery; the
// write carries that span's context, so the outbox row continues it too.
func (w *Worker) stage(ctx context.Context, r store.Receipt) *staged {
	ctx, span := tracing.Tracer().Start(tracing.WithTraceparent(ctx, r.Traceparent), "receipt.apply",
		trace.WithAttributes(attribute.String("onceflow.event_id", r.EventID), attribute.String("onceflow.event_type", r.EventType)))
	s := &staged{r: r, span: span, start: time.Now()}
	s.prepared, s.err = w.prepare(ctx, r)
	return s
}

// prepare fetches and checks what r's source kind needs: PSP events are
// re-fetched, provider events forwarded to the invoicer, and generic events
// only kept. A PAID payment's check (paid) is made for the whole batch
// before any write runs.
func (w *Worker) prepare(ctx context.Context, r store.Receipt) (prepared, error) {
	switch {
	case webhook.Kind(r.Kind) == webhook.KindPSP:
		return w.preparePSPEvent(ctx, r)
	case webhook.Kind(r.Kind) == webhook.KindFiscalProvider:
		wr, err := prepareProviderEvent(ctx, r)
		return prepared{write: wr}, err
	case webhook.Kind(r.Kind) == webhook.KindGeneric:
		return prepared{write: func(*store.Tx, *records) error { return nil }}, nil
	}
	return prepared{}, errRejected{reason: "unknown event type " + r.EventType}
}

// preparePSPEvent re-fetches r's payment or refund from the adapter of r's
// scope. A scope no adapter serves (a source removed from the sources
// file) is retried, so the receipt parks with its case rather than
// vanishing.
func (w *Worker) preparePSPEvent(ctx context.Context, r store.Receipt) (prepared, error) {
	p, ok := w.psps[r.Scope]
	if !ok {
		return prepared{}, fmt.Errorf("no PSP adapter serves dedupe scope %q", r.Scope)
	}
	switch r.EventType {
	case "payment":
		return w.preparePayment(ctx, p, r)
	case "refund":
		wr, err := w.prepareRefund(ctx, p, r.EventID)
		return prepared{write: wr}, err
	}
	return prepared{}, errRejected{reason: "unknown event type " + r.EventType}
}

// errRejected marks a receipt whose authoritative state contradicts the
// order: it is finished as rejected and nothing is emitted; with a case,
// the case opens in the same transaction, holding on to the receipt.
type errRejected struct {
	reason string
	kase   *store.Case
}

func (e errRejected) Error() string { return e.reason }

// settle ends s's span and finishes or reschedules its receipt by its
// outcome.
func (w *Worker) settle(ctx context.Context, s *staged, token uuid.UUID) {
	defer s.span.End()
	log := w.log.With(zap.Int64("receipt", s.r.ID), zap.String("event_id", s.r.EventID), zap.String("event_type", s.r.EventType))
	var rej errRejected
	outcome := "done"
	switch {
	case s.err == nil:
		log.Info("receipt applied")
	case errors.As(s.err, &rej):
		outcome = "rejected"
		log.Warn("receipt rejected", zap.String("reason", rej.reason))
		w.reject(ctx, s.r, token, rej)
	case errors.Is(s.err, errLostClaim):
		outcome = "lost"
		log.Info("receipt taken over by another worker")
	default:
		outcome = w.retryLater(ctx, log, s.r, token, s.err)
	}
	w.applied.WithLabelValues(outcome).Inc()
	w.latency.Observe(time.Since(s.start).Seconds())
}

func (w *Worker) retryLater(ctx context.Context, log *zap.Logger, r store.Receipt, token uuid.UUID, cause error) string {
	attempt := r.Attempts + 1
	park := attempt >= w.cfg.MaxAttempts
	next := time.Now().Add(w.cfg.Backoff.Delay(attempt))
	var err error
	if park {
		err = w.park(ctx, r, token, cause, next)
	} else {
		err = w.store.RetryReceiptLater(ctx, r.ID, token, cause.Error(), next, false)
	}
	if err != nil {
		log.Error("record receipt failure", zap.Error(err))
	}
	if park {
		log.Warn("receipt parked", zap.Int("attempts", attempt), zap.Error(cause))
		return "parked"
	}
	log.Info("receipt will be retried", zap.Int("attempt", attempt), zap.Error(cause))
	return "retry"
}

// reject finishes r as rejected, with its case when rej has one.
func (w *Worker) reject(ctx context.Context, r store.Receipt, token uuid.UUID, rej errRejected) {
	var err error
	if rej.kase != nil {
		err = w.rejectWithCase(ctx, r, token, rej)
	} else {
		err = w.store.FinishReceipt(ctx, r.ID, token, "rejected", &rej.reason)
	}
	if err != nil {
		w.log.Error("finish receipt", zap.Int64("receipt", r.ID), zap.Error(err))
	}
}

// record commits the batch's writes, each with its receipt marked done, in
// one transaction. When that fails (a lost claim, a refund refused under
// lock, a deadlock with another worker's batch) each is committed alone, so
// one receipt's error stays its own.
func (w *Worker) record(ctx context.Context, batch []*staged, token uuid.UUID) {
	if len(batch) == 0 {
		return
	}
	switch err := w.commit(ctx, batch, token); {
	case err == nil:
	case len(batch) == 1:
		batch[0].err = err
	default:
		for _, s := range batch {
			s.err = w.commit(ctx, []*staged{s}, token)
		}
	}
}

// commit runs the writes and marks their receipts done in one transaction,
// fenced by the claim token; once committed it wakes the relay if a write
// inserted an event.
func (w *Worker) commit(ctx context.Context, batch []*staged, token uuid.UUID) error {
	var events int64
	err := w.store.InTx(ctx, func(tx *store.Tx) error {
		var r records
		if err := r.lockPaid(ctx, tx, batch); err != nil {
			return err
		}
		for _, s := range batch {
			if err := s.write(tx, &r); err != nil {
				return err
			}
		}
		var err error
		if events, err = r.write(ctx, tx); err != nil {
			return err
		}
		return finishDone(ctx, tx, batch, token)
	})
	if err == nil && events > 0 && w.cfg.WakeRelay != nil {
		w.cfg.WakeRelay()
	}
	return err
}
