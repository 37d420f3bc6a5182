package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// Outbox is where ingest's events go.
var Outbox = outbox.Table{Schema: "ingest", Name: "outbox"}

// PSP is the authoritative source of payments and refunds.
type PSP interface {
	Payment(ctx context.Context, id string) (psp.Payment, error)
	Refund(ctx context.Context, id string) (psp.Refund, error)
}

// Config tunes the worker.
type Config struct {
	Batch       int           // receipts claimed per round
	Lease       time.Duration // how long a claim lasts
	Poll        time.Duration // fallback wake-up period
	MaxAttempts int           // failures before a receipt is parked
	Backoff     backoff.Policy
	// WakeRelay tells the relay an event was committed; nil leaves it to
	// the relay's poll.
	WakeRelay func()
}

// Worker applies pending receipts.
type Worker struct {
	pool    *pgxpool.Pool
	queries *store.Queries
	psp     PSP
	log     *zap.Logger
	cfg     Config
	wake    <-chan struct{}
	applied *prometheus.CounterVec
	latency prometheus.Histogram
}

// NewWorker returns a worker; wake nudges it when a receipt arrives.
func NewWorker(pool *pgxpool.Pool, p PSP, log *zap.Logger, reg prometheus.Registerer, cfg Config, wake <-chan struct{}) *Worker {
	w := &Worker{pool: pool, queries: store.New(pool), psp: p, log: log, cfg: cfg, wake: wake,
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_ingest_apply_total", Help: "Receipt apply attempts by outcome (done, rejected, retry, parked, lost: another worker took the receipt over).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "onceflow_ingest_apply_seconds", Help: "Time to apply one receipt, PSP re-fetch included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		})}
	reg.MustRegister(w.applied, w.latency)
	return w
}

// Run applies receipts until ctx ends. A full batch is followed at once by
// the next; otherwise the worker waits for a nudge or the poll period.
func (w *Worker) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		httpserver.Beat(ctx)
		n, err := w.Round(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("apply round failed", zap.Error(err))
		}
		if n == w.cfg.Batch {
			continue
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-time.After(w.cfg.Poll):
		}
	}
	return nil
}

// Round claims one batch of due receipts and applies each; it returns how
// many it claimed.
func (w *Worker) Round(ctx context.Context) (int, error) {
	token := uuid.New()
	rows, err := w.queries.ReceiptClaimDue(ctx, &token, w.cfg.Lease.Seconds(), int32(w.cfg.Batch))
	if err != nil {
		return 0, fmt.Errorf("claim receipts: %w", err)
	}
	for _, r := range rows {
		if ctx.Err() != nil {
			break // shutting down: the rest of the claim lapses and another worker takes it
		}
		start := time.Now()
		outcome := w.applyOne(ctx, r, token)
		w.applied.WithLabelValues(outcome).Inc()
		w.latency.Observe(time.Since(start).Seconds())
	}
	return len(rows), nil
}

// errRejected marks a receipt whose authoritative state contradicts the
// order: it is finished as rejected and nothing is emitted.
type errRejected struct{ reason string }

func (e errRejected) Error() string { return e.reason }

func (w *Worker) applyOne(ctx context.Context, r store.ReceiptClaimDueRow, token uuid.UUID) string {
	ctx, span := tracing.Tracer().Start(tracing.WithTraceparent(ctx, r.Traceparent), "receipt.apply",
		trace.WithAttributes(attribute.String("onceflow.event_id", r.EventID), attribute.String("onceflow.event_type", r.EventType)))
	defer span.End()
	err := w.dispatch(ctx, r, token)
	log := w.log.With(zap.Int64("receipt", r.ID), zap.String("event_id", r.EventID), zap.String("event_type", r.EventType))
	var rej errRejected
	switch {
	case err == nil:
		log.Info("receipt applied")
		return "done"
	case errors.As(err, &rej):
		log.Warn("receipt rejected", zap.String("reason", rej.reason))
		w.finish(ctx, r.ID, token, "rejected", &rej.reason)
		return "rejected"
	case errors.Is(err, errLostClaim):
		log.Info("receipt taken over by another worker")
		return "lost"
	default:
		return w.retryLater(ctx, log, r, token, err)
	}
}

// dispatch applies the receipt by its source's kind: PSP events are
// re-fetched and applied, provider events forwarded to the invoicer, and
// generic events only kept.
func (w *Worker) dispatch(ctx context.Context, r store.ReceiptClaimDueRow, token uuid.UUID) error {
	switch {
	case webhook.Kind(r.Kind) == webhook.KindPSP && r.EventType == "payment":
		return w.applyPayment(ctx, r.EventID, r.ID, token)
	case webhook.Kind(r.Kind) == webhook.KindPSP && r.EventType == "refund":
		return w.applyRefund(ctx, r.EventID, r.ID, token)
	case webhook.Kind(r.Kind) == webhook.KindFiscalProvider:
		return w.applyProviderEvent(ctx, r, token)
	case webhook.Kind(r.Kind) == webhook.KindGeneric:
		return w.commit(ctx, r.ID, token, func(*store.Queries, pgx.Tx) (bool, error) { return false, nil })
	}
	return errRejected{reason: "unknown event type " + r.EventType}
}

func (w *Worker) retryLater(ctx context.Context, log *zap.Logger, r store.ReceiptClaimDueRow, token uuid.UUID, cause error) string {
	attempt := int(r.Attempts) + 1
	park := attempt >= w.cfg.MaxAttempts
	msg := cause.Error()
	_, err := w.queries.ReceiptRetryLater(ctx, store.ReceiptRetryLaterParams{
		ID: r.ID, LeaseToken: &token, LastError: &msg, Park: park,
		NextAttemptAt: time.Now().Add(w.cfg.Backoff.Delay(attempt)),
	})
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

func (w *Worker) finish(ctx context.Context, id int64, token uuid.UUID, status string, reason *string) {
	if _, err := w.queries.ReceiptFinish(ctx, store.ReceiptFinishParams{ID: id, LeaseToken: &token, Status: status, LastError: reason}); err != nil {
		w.log.Error("finish receipt", zap.Int64("receipt", id), zap.Error(err))
	}
}

// insertEvent writes msg to the outbox in tx, carrying ctx's trace so the
// relay and the invoicer continue it; inserted is false for an event
// already there.
func insertEvent(ctx context.Context, tx pgx.Tx, msg outbox.Message) (inserted bool, err error) {
	msg.Traceparent = tracing.Traceparent(ctx)
	return outbox.Insert(ctx, tx, Outbox, msg)
}

// errLostClaim means another worker took the receipt over: roll back.
var errLostClaim = errors.New("receipt claim lost to another worker")

// commit runs fn and marks the receipt done in one transaction, fenced by
// the claim token; once committed it wakes the relay if fn inserted an
// event.
func (w *Worker) commit(ctx context.Context, receipt int64, token uuid.UUID, fn func(q *store.Queries, tx pgx.Tx) (evented bool, err error)) error {
	var evented bool
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := w.queries.WithTx(tx)
		var err error
		if evented, err = fn(q, tx); err != nil {
			return err
		}
		n, err := q.ReceiptFinish(ctx, store.ReceiptFinishParams{ID: receipt, LeaseToken: &token, Status: "done"})
		if err != nil {
			return fmt.Errorf("finish receipt: %w", err)
		}
		if n == 0 {
			return errLostClaim
		}
		return nil
	})
	if err == nil && evented && w.cfg.WakeRelay != nil {
		w.cfg.WakeRelay()
	}
	return err
}
