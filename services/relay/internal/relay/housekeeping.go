package relay

import (
	"context"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/outbox"
)

// schedule holds when the leader's periodic jobs are next due. Only the
// keeper, the holder of shard 0, prunes and reports the backlog.
type schedule struct {
	keeper              bool
	renew, prune, stats time.Time
}

// next is the earliest of the due times: the longest the leader may sleep.
func (s schedule) next() time.Time {
	if !s.keeper {
		return s.renew
	}
	return slices.MinFunc([]time.Time{s.renew, s.prune, s.stats}, time.Time.Compare)
}

// housekeep runs the leader's periodic jobs that are due: the backlog
// gauges, and one batch of retention. A full prune batch leaves pruning due,
// so a large backlog of expired rows is deleted between publishing batches
// without holding them up.
func (r *Relay) housekeep(ctx context.Context, due *schedule) {
	now := time.Now()
	if !now.Before(due.stats) {
		r.reportStats(ctx)
		due.stats = now.Add(r.s.StatsInterval)
	}
	if !now.Before(due.prune) && r.prune(ctx) < int64(r.s.PruneBatch) {
		due.prune = now.Add(r.s.PruneInterval)
	}
}

// prune deletes one batch of rows published longer than the retention ago
// and returns how many it deleted.
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
