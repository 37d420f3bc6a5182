// Package housekeeping keeps ingest's hot tables small and its backlog
// visible: it deletes finished receipts, old idempotency keys and old
// delivered notifications and recorded PSP calls in small batches, and exports the pending-receipt backlog as gauges.
package housekeeping

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Config tunes the pruner.
type Config struct {
	ReceiptRetention     time.Duration
	IdempotencyRetention time.Duration
	// NotificationRetention is how long a delivered merchant notification
	// (and its attempt log) is kept; pending and parked ones stay.
	NotificationRetention time.Duration
	Interval              time.Duration
	Batch                 int
}

// Pruner deletes what has outlived its retention.
type Pruner struct {
	store  *store.Store
	log    *zap.Logger
	cfg    Config
	pruned *prometheus.CounterVec
}

// NewPruner returns a pruner.
func NewPruner(st *store.Store, log *zap.Logger, reg prometheus.Registerer, cfg Config) *Pruner {
	p := &Pruner{store: st, log: log, cfg: cfg, pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_ingest_pruned_total", Help: "Rows deleted by retention, by table.",
	}, []string{"table"})}
	reg.MustRegister(p.pruned)
	return p
}

// Run prunes every Interval until ctx ends.
func (p *Pruner) Run(ctx context.Context) error {
	worker.Every(ctx, p.cfg.Interval, func(ctx context.Context) {
		if err := p.Prune(ctx, time.Now()); err != nil && ctx.Err() == nil {
			p.log.Warn("prune failed", zap.Error(err))
		}
	})
	return nil
}

// Prune deletes, batch by batch in short transactions, finished receipts,
// idempotency keys, delivered notifications and recorded PSP calls (kept
// as long as receipts) older than their retention at now.
func (p *Pruner) Prune(ctx context.Context, now time.Time) error {
	if err := p.drain(ctx, "webhook_receipts", func() (int64, error) {
		return p.store.PruneReceipts(ctx, now.Add(-p.cfg.ReceiptRetention), p.cfg.Batch)
	}); err != nil {
		return err
	}
	if err := p.drain(ctx, "idempotency_keys", func() (int64, error) {
		return p.store.PruneIdempotencyKeys(ctx, now.Add(-p.cfg.IdempotencyRetention), p.cfg.Batch)
	}); err != nil {
		return err
	}
	if err := p.drain(ctx, "notification_deliveries", func() (int64, error) {
		return p.store.PruneDeliveries(ctx, now.Add(-p.cfg.NotificationRetention), p.cfg.Batch)
	}); err != nil {
		return err
	}
	return p.drain(ctx, "psp_fetches", func() (int64, error) {
		return p.store.PrunePSPFetches(ctx, now.Add(-p.cfg.ReceiptRetention), p.cfg.Batch)
	})
}

func (p *Pruner) drain(ctx context.Context, table string, deleteBatch func() (int64, error)) error {
	for ctx.Err() == nil {
		n, err := deleteBatch()
		if err != nil {
			return err
		}
		p.pruned.WithLabelValues(table).Add(float64(n))
		if n < int64(p.cfg.Batch) {
			return nil
		}
	}
	return ctx.Err()
}

// Backlog exports, at each scrape, the number of pending receipts and the
// arrival time of the oldest, and when the earliest scheduled order poll
// is due.
type Backlog struct {
	store    *store.Store
	pending  *prometheus.Desc
	oldest   *prometheus.Desc
	pollsDue *prometheus.Desc
}

// NewBacklog returns the collector; register it on the service's registry.
func NewBacklog(st *store.Store) *Backlog {
	return &Backlog{store: st,
		pending: prometheus.NewDesc("onceflow_ingest_receipts_pending", "Receipts waiting to be applied.", nil, nil),
		oldest:  prometheus.NewDesc("onceflow_ingest_receipts_oldest_pending_timestamp_seconds", "Arrival time of the oldest pending receipt (0 when none).", nil, nil),
		pollsDue: prometheus.NewDesc("onceflow_ingest_poll_earliest_due_timestamp_seconds",
			"When the earliest scheduled order poll is due (0 when none); long past means the status poller is behind.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (b *Backlog) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.pending
	ch <- b.oldest
	ch <- b.pollsDue
}

// Collect implements prometheus.Collector with two short queries.
func (b *Backlog) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	backlog, err := b.store.ReceiptBacklog(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(b.pending, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(b.pending, prometheus.GaugeValue, float64(backlog.Pending))
	ch <- prometheus.MustNewConstMetric(b.oldest, prometheus.GaugeValue, unixSeconds(backlog.Oldest))
	due, err := b.store.EarliestPollDue(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(b.pollsDue, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(b.pollsDue, prometheus.GaugeValue, unixSeconds(due))
}

// unixSeconds is t in seconds since the epoch, 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
