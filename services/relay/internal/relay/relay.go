// Package relay publishes outbox rows to their SQS queues. Each outbox is
// split into shards by a hash of the event key (see outbox.ShardSlots); a
// PostgreSQL lease with a fencing token makes exactly one process the
// publisher of a shard at a time, and the processes running a relay share
// an outbox's shards fairly, taking over a dead one's within the lease TTL.
//
// Delivery is at least once: a row is marked published only after SQS has
// accepted it, so a crash between the two sends it again, and consumers
// dedupe on the event key.
package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/worker"
)

// LeaseSchema is the schema whose leases table holds the relay's leases.
const LeaseSchema = "relay"

// PoolOptions are the planner settings of the relay's connections, which
// keep its claims and marks reading about a batch of rows however stale
// the outbox's statistics are (docs/relay-sharding.md, "Which shard a row
// belongs to"):
//   - each statement is planned for its own arguments: a generic plan made
//     while the outbox was small (a sequential scan) would be kept as it
//     grows, and every mark would read the whole table;
//   - no bitmap scans: statistics taken while few rows were due (the steady
//     state) make a claim of a sudden backlog look like a handful of rows,
//     and PostgreSQL then fetched every due row and sorted them for a batch
//     of 500, each claim reading the whole backlog again. Without them a
//     claim walks the due index in id order and stops after a batch.
var PoolOptions = []pg.Option{
	pg.WithSetting("plan_cache_mode", "force_custom_plan"),
	pg.WithSetting("enable_bitmapscan", "off"),
}

// Sender sends batches of messages to SQS; *sqs.Client satisfies it.
type Sender interface {
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// Settings tune every Relay of a process.
type Settings struct {
	Holder          string         // unique id of this process in the lease table
	BatchSize       int            // rows claimed per run
	MaxAttempts     int            // a row is parked after this many failed sends
	Backoff         backoff.Policy // delay before a failed row is retried
	PollInterval    time.Duration  // fallback wake-up when no NOTIFY arrives
	LeaseTTL        time.Duration  // lease lifetime; renewed every third of it
	MaxMessageBytes int            // larger messages are parked, never sent
	MaxBatchBytes   int            // the most one SendMessageBatch call carries
	Retention       time.Duration  // published rows are deleted this long after publication
	PruneInterval   time.Duration  // how often the leader deletes expired rows
	PruneBatch      int            // rows deleted per statement
	StatsInterval   time.Duration  // how often the leader counts pending and parked rows
	// Signer signs every message published (package msgauth); nil
	// publishes them unsigned, which a consumer that checks refuses.
	Signer *msgauth.Key
	// Shards is how many shards each outbox is split into, from 1 to
	// outbox.SlotCount. Processes configured with another number stand by
	// while this one's shards are held, and the other way round.
	Shards int
}

// Relay publishes one outbox: the shards of it that this process holds.
type Relay struct {
	pool    *pgxpool.Pool
	sender  Sender
	metrics *Metrics
	log     *zap.Logger
	outbox  Outbox
	name    string // schema.table, the metric and log label
	s       Settings
	shards  []*shard
	roster  *lease.Roster
}

// shard is one of an outbox's shards: the rows whose slots are in slots.
type shard struct {
	index int
	slots outbox.Slots
	lease *lease.Lease
	log   *zap.Logger
	wake  chan struct{} // a NOTIFY arrived; one pending wake is enough
}

// New returns the relay of ob, split into s.Shards shards. Its queues must
// already be URLs.
func New(pool *pgxpool.Pool, sender Sender, m *Metrics, log *zap.Logger, ob Outbox, s Settings) *Relay {
	name := ob.Table.String()
	n := max(s.Shards, 1)
	m.zero(ob, n)
	log = log.With(zap.String("outbox", name))
	lay := &lease.Layout{Prefix: leasePrefix(ob.Table)}
	for i := range n {
		lay.Names = append(lay.Names, LeaseName(ob.Table, i, n))
	}
	r := &Relay{
		pool: pool, sender: sender, metrics: m, outbox: ob, name: name, s: s, log: log,
		roster: lease.NewRoster(pool, LeaseSchema, fmt.Sprintf("%sshards=%d", lay.Prefix, n), s.Holder, s.LeaseTTL),
	}
	for i := range n {
		r.shards = append(r.shards, &shard{
			index: i, slots: outbox.ShardSlots(i, n),
			lease: lease.NewInLayout(pool, LeaseSchema, lay, lay.Names[i], s.Holder, s.LeaseTTL),
			log:   log.With(zap.Int("shard", i), zap.Int("shards", n)),
			wake:  make(chan struct{}, 1),
		})
	}
	return r
}

// renewEvery is how often the leader renews: three chances per TTL.
func (r *Relay) renewEvery() time.Duration { return max(r.s.LeaseTTL/3, time.Millisecond) }

// standbyEvery is how often a relay counts the live relays and takes or
// hands back shards. A lapsed lease is taken at most a tenth of the TTL
// after it expires, so a killed relay's shards are taken over within about
// one TTL (at most 1.1 TTL).
func (r *Relay) standbyEvery() time.Duration { return max(r.s.LeaseTTL/10, time.Millisecond) }

// lead publishes sh under token until ctx ends or the lease is lost. The
// holder of shard 0 also runs the outbox's periodic jobs meanwhile (keep).
func (r *Relay) lead(ctx context.Context, sh *shard, token int64) {
	sh.log.Info("leading", zap.Int64("token", token))
	if sh.index == 0 {
		r.metrics.leader.WithLabelValues(r.name).Set(1)
		defer r.metrics.forget(r.name)
		defer r.metrics.leader.WithLabelValues(r.name).Set(0)
		keeping, stop := context.WithCancel(ctx)
		var kept sync.WaitGroup
		kept.Go(func() { r.keep(keeping) })
		defer kept.Wait()
		defer stop()
	}
	batches := r.newPipeline(sh)
	defer batches.wait()
	renewAt := time.Now().Add(r.renewEvery())
	for ctx.Err() == nil {
		full, err := batches.publish(ctx, token)
		if errors.Is(err, lease.ErrDeposed) {
			sh.log.Warn("deposed: another relay holds the lease; stopped publishing", zap.Int64("token", token))
			return
		}
		if err != nil && ctx.Err() == nil {
			sh.log.Warn("publish batch", zap.Error(err))
		}
		if !full {
			r.wait(ctx, sh.wake, time.Until(renewAt))
		}
		if ctx.Err() == nil && !time.Now().Before(renewAt) {
			next, ok := r.renew(ctx, sh, token)
			switch {
			case ok:
				token, renewAt = next, time.Now().Add(r.renewEvery())
			case ctx.Err() == nil:
				return // lost: batches in flight finish, but their marks are refused
			}
		}
	}
	// Shutting down or handing the shard over: finish the batches in
	// flight, then release at once.
	batches.wait()
	r.release(ctx, sh, token)
}

// renew extends the lease; ok is false when it is lost or cannot be
// confirmed, and the caller must stop publishing.
func (r *Relay) renew(ctx context.Context, sh *shard, token int64) (int64, bool) {
	next, ok, err := sh.lease.Acquire(ctx)
	switch {
	case err != nil && ctx.Err() != nil: // shutting down; the caller releases
	case err != nil:
		sh.log.Warn("renew lease; stepping down", zap.Error(err))
	case !ok:
		sh.log.Warn("lease lost to another relay; stepping down", zap.Int64("token", token))
	case next != token:
		sh.log.Info("lease expired and re-acquired", zap.Int64("token", next))
	}
	return next, err == nil && ok
}

// release gives the lease up for a quick hand-over at shutdown.
func (r *Relay) release(ctx context.Context, sh *shard, token int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := sh.lease.Release(ctx, token); err != nil {
		sh.log.Warn("release lease", zap.Error(err))
		return
	}
	sh.log.Info("released lease", zap.Int64("token", token))
}

// wait blocks until a notification, the poll interval, at most limit, or
// the end of ctx.
func (r *Relay) wait(ctx context.Context, wake <-chan struct{}, limit time.Duration) {
	worker.Wait(ctx, wake, min(r.s.PollInterval, limit))
}
