// Package relay publishes outbox rows to their SQS queues. One Relay runs per
// outbox shard; a PostgreSQL lease with a fencing token makes exactly one
// process the publisher of a shard at a time while others stand by.
//
// Delivery is at least once: a row is marked published only after SQS has
// accepted it, so a crash between the two sends it again, and consumers
// dedupe on the event key.
package relay

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/worker"
)

// LeaseSchema is the schema whose leases table holds the relay's leases.
const LeaseSchema = "relay"

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
}

// Relay publishes one shard of one outbox while it holds that shard's lease.
type Relay struct {
	pool    *pgxpool.Pool
	sender  Sender
	metrics *Metrics
	log     *zap.Logger
	outbox  Outbox
	name    string // schema.table, the metric and log label
	lease   *lease.Lease
	s       Settings
}

// New returns the relay of shard 0 of ob. Its queues must already be URLs.
func New(pool *pgxpool.Pool, sender Sender, m *Metrics, log *zap.Logger, ob Outbox, s Settings) *Relay {
	name := ob.Table.String()
	m.zero(ob)
	return &Relay{
		pool: pool, sender: sender, metrics: m, outbox: ob, name: name, s: s,
		log:   log.With(zap.String("outbox", name)),
		lease: lease.New(pool, LeaseSchema, LeaseName(ob.Table, 0), s.Holder, s.LeaseTTL),
	}
}

// Run competes for the lease until ctx ends and publishes while it holds it.
// On cancellation it lets the batch in flight finish, releases the lease so
// a standby takes over at once, and returns. Failures of PostgreSQL or SQS
// are logged and retried; they never end Run.
func (r *Relay) Run(ctx context.Context) {
	for {
		worker.Beat(ctx)
		token, ok, err := r.lease.Acquire(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("acquire lease", zap.Error(err))
		case ok:
			r.lead(ctx, token)
		}
		if !backoff.Sleep(ctx, r.standbyEvery()) {
			return
		}
	}
}

// renewEvery is how often the leader renews: three chances per TTL.
func (r *Relay) renewEvery() time.Duration { return max(r.s.LeaseTTL/3, time.Millisecond) }

// standbyEvery is how often a standby tries the lease. A lapsed lease is
// taken at most a tenth of the TTL after it expires, so a killed leader is
// replaced within about one TTL (at most 1.1 TTL).
func (r *Relay) standbyEvery() time.Duration { return max(r.s.LeaseTTL/10, time.Millisecond) }

// lead publishes under token until ctx ends or the lease is lost, and runs
// the leader's periodic jobs between batches.
func (r *Relay) lead(ctx context.Context, token int64) {
	r.log.Info("leading", zap.Int64("token", token))
	r.metrics.leader.WithLabelValues(r.name).Set(1)
	defer r.metrics.forget(r.name)
	defer r.metrics.leader.WithLabelValues(r.name).Set(0)

	wake := make(chan struct{}, 1)
	listenCtx, stopListening := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.listen(listenCtx, wake) })
	defer wg.Wait()
	defer stopListening()

	batches := r.newPipeline()
	defer batches.wait()
	now := time.Now()
	due := schedule{renew: now.Add(r.renewEvery()), prune: now, stats: now}
	for ctx.Err() == nil {
		worker.Beat(ctx)
		full, err := batches.publish(ctx, token)
		if errors.Is(err, lease.ErrDeposed) {
			r.log.Warn("deposed: another relay holds the lease; stopped publishing", zap.Int64("token", token))
			return
		}
		if err != nil && ctx.Err() == nil {
			r.log.Warn("publish batch", zap.Error(err))
		}
		r.housekeep(ctx, &due)
		if !full {
			r.wait(ctx, wake, time.Until(due.next()))
		}
		if ctx.Err() == nil && !time.Now().Before(due.renew) {
			next, ok := r.renew(ctx, token)
			switch {
			case ok:
				token, due.renew = next, time.Now().Add(r.renewEvery())
			case ctx.Err() == nil:
				return // lost: batches in flight finish, but their marks are refused
			}
		}
	}
	// Shutting down: finish the batches in flight, then hand over at once.
	batches.wait()
	r.release(ctx, token)
}

// renew extends the lease; ok is false when it is lost or cannot be
// confirmed, and the caller must stop publishing.
func (r *Relay) renew(ctx context.Context, token int64) (int64, bool) {
	next, ok, err := r.lease.Acquire(ctx)
	switch {
	case err != nil && ctx.Err() != nil: // shutting down; the caller releases
	case err != nil:
		r.log.Warn("renew lease; stepping down", zap.Error(err))
	case !ok:
		r.log.Warn("lease lost to another relay; stepping down", zap.Int64("token", token))
	case next != token:
		r.log.Info("lease expired and re-acquired", zap.Int64("token", next))
	}
	return next, err == nil && ok
}

// release gives the lease up for a quick hand-over at shutdown.
func (r *Relay) release(ctx context.Context, token int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.lease.Release(ctx, token); err != nil {
		r.log.Warn("release lease", zap.Error(err))
		return
	}
	r.log.Info("released lease", zap.Int64("token", token))
}

// wait blocks until a notification, the poll interval, at most limit, or
// the end of ctx.
func (r *Relay) wait(ctx context.Context, wake <-chan struct{}, limit time.Duration) {
	worker.Wait(ctx, wake, min(r.s.PollInterval, limit))
}
