package relay

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/outbox"
)

// keep runs the outbox's periodic jobs, the backlog gauges and the
// retention, until ctx ends. The holder of shard 0 runs it beside its
// publishing, on a connection of its own, so a prune, which reads the
// outbox's oldest pages, seldom in PostgreSQL's buffers, never holds a
// batch up. A full prune batch leaves pruning due, so a large backlog of
// expired rows is deleted batch after batch.
func (r *Relay) keep(ctx context.Context) {
	now := time.Now()
	stats, prune := now, now
	for {
		if !now.Before(stats) {
			r.reportStats(ctx)
			stats = now.Add(r.s.StatsInterval)
		}
		if !now.Before(prune) && r.prune(ctx) < int64(r.s.PruneBatch) {
			prune = now.Add(r.s.PruneInterval)
		}
		if !backoff.Sleep(ctx, min(time.Until(stats), time.Until(prune))) {
			return
		}
		now = time.Now()
	}
}

// prune deletes one batch of rows published longer than the retention ago
// and returns how many it deleted. A statement is given a third of the
// lease's TTL, as the leader's own are; one cut short is tried again at
// the next interval.
func (r *Relay) prune(ctx context.Context) int64 {
	ctx, cancel := context.WithTimeout(ctx, r.renewEvery())
	defer cancel()
	n, err := outbox.Prune(ctx, r.pool, r.outbox.Table, time.Now().Add(-r.s.Retention), r.s.PruneBatch)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("prune published rows", zap.Error(err))
		}
		return 0
	}
	r.metrics.pruned.WithLabelValues(r.name).Add(float64(n))
	if n > 0 {
		r.log.Debug("pruned published rows", zap.Int64("rows", n))
	}
	return n
}

// reportStats sets the backlog gauges from the outbox table.
func (r *Relay) reportStats(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.renewEvery())
	defer cancel()
	s, err := outbox.ReadStats(ctx, r.pool, r.outbox.Table)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("read outbox stats", zap.Error(err))
		}
		return
	}
	r.metrics.report(r.name, s)
}
