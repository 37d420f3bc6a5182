// Package retention keeps the invoicer's emission_attempts bounded: every
// interval it deletes, in small batches, the attempts older than the
// retention of documents in a final status, keeping each document's last
// attempt as the record of how it ended. Documents still in flight, or in
// needs_attention, keep every attempt an operator may need.
//
// The kept attempts, one a document, pile up at the low ids for good, so a
// pass starts where the last one stopped instead of reading them all again;
// once a day (FullEvery) a pass starts from the lowest id, for the attempts
// it passed while their document was still in flight, or committed late.
package retention

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/worker"
)

// Store finds where a pass ends and deletes expired attempts a batch at a
// time; *store.Store is one.
type Store interface {
	// PruneBound returns the id of the first attempt above after made at
	// or after olderThan: a pass looks only below it.
	PruneBound(ctx context.Context, olderThan time.Time, after int64) (int64, error)
	// PruneAttempts looks at up to batch expired attempts between after
	// and below, deletes the deletable ones, and returns the highest id it
	// looked at (0: none left) and how many it deleted.
	PruneAttempts(ctx context.Context, olderThan time.Time, after, below int64, batch int32) (last, deleted int64, err error)
}

// FullEvery is how often a pass starts from the lowest id.
const FullEvery = 24 * time.Hour

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
	after  int64     // where the next pass starts: the highest id looked at
	fullAt time.Time // when the last pass from the lowest id began
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

// Prune deletes, batch after batch, the attempts expired at now, from where
// the last pass stopped (from the lowest id once FullEvery has passed since
// the last such pass); it stops once a batch finds nothing to look at, or
// when ctx ends. Prune is not safe for concurrent use.
func (p *Pruner) Prune(ctx context.Context, now time.Time) error {
	if now.Sub(p.fullAt) >= FullEvery {
		p.after, p.fullAt = 0, now
	}
	cutoff := now.Add(-p.cfg.Retention)
	below, err := p.store.PruneBound(ctx, cutoff, p.after)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		last, n, err := p.store.PruneAttempts(ctx, cutoff, p.after, below, p.cfg.Batch)
		if err != nil {
			return err
		}
		p.pruned.Add(float64(n))
		if last == 0 {
			return nil
		}
		p.after = last
	}
	return ctx.Err()
}
