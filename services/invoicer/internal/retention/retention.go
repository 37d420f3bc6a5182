// Package retention keeps the invoicer's emission_attempts bounded: every
// interval it deletes, in small batches, the attempts older than the
// retention of documents in a final status, keeping each document's last
// attempt as the record of how it ended. Documents still in flight, or in
// needs_attention, keep every attempt an operator may need.
package retention

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/worker"
)

// Store deletes one batch of expired attempts; *store.Store is one.
type Store interface {
	PruneAttempts(ctx context.Context, olderThan time.Time, batch int32) (int64, error)
}

// Config tunes the pruner.
type Config struct {
	Retention time.Duration // attempts older than this go
	Interval  time.Duration // how often a pass runs
	Batch     int32         // rows deleted per statement (one short transaction)
}

// Pruner deletes attempts that have outlived the retention.
type Pruner struct {
	store  Store
	log    *zap.Logger
	cfg    Config
	pruned prometheus.Counter
}

// NewPruner returns a pruner and registers onceflow_invoicer_pruned_total.
func NewPruner(st Store, log *zap.Logger, reg prometheus.Registerer, cfg Config) *Pruner {
	p := &Pruner{store: st, log: log, cfg: cfg, pruned: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "onceflow_invoicer_pruned_total", Help: "Rows deleted by retention, by table.",
		ConstLabels: prometheus.Labels{"table": "emission_attempts"},
	})}
	reg.MustRegister(p.pruned)
	return p
}

// Run prunes every Interval until ctx ends.
func (p *Pruner) Run(ctx context.Context) error {
	worker.Every(ctx, p.cfg.Interval, func(ctx context.Context) {
		if err := p.Prune(ctx, time.Now()); err != nil && ctx.Err() == nil {
			p.log.Warn("prune emission attempts failed", zap.Error(err))
		}
	})
	return nil
}

// Prune deletes, batch after batch, the attempts expired at now; it stops
// at the first batch smaller than Batch, or when ctx ends.
func (p *Pruner) Prune(ctx context.Context, now time.Time) error {
	for ctx.Err() == nil {
		n, err := p.store.PruneAttempts(ctx, now.Add(-p.cfg.Retention), p.cfg.Batch)
		if err != nil {
			return err
		}
		p.pruned.Add(float64(n))
		if n < int64(p.cfg.Batch) {
			return nil
		}
	}
	return ctx.Err()
}
