package relay

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/worker"
)

// term is one stretch of this process publishing one shard.
type term struct {
	cancel   context.CancelFunc
	done     chan struct{}
	stopping bool // handed back to share the shards with a newcomer
}

// Run takes this process's fair share of the outbox's shards and publishes
// them until ctx ends: every standby period it counts the live relays of
// the outbox (those with the same number of shards), takes free or expired
// shards while it holds fewer than its share, and hands back any it holds
// beyond it. On cancellation it leaves the roster, and each shard lets its
// batches in flight finish and releases its lease, so the other relays take
// over at once. Failures of PostgreSQL or SQS are logged and retried; they
// never end Run.
func (r *Relay) Run(ctx context.Context) {
	var listening sync.WaitGroup
	listenCtx, stopListening := context.WithCancel(ctx)
	listening.Go(func() { r.listen(listenCtx) })
	terms := map[int]*term{}
	for {
		worker.Beat(ctx)
		r.balance(ctx, terms)
		if !backoff.Sleep(ctx, r.standbyEvery()) {
			break
		}
	}
	r.leave(ctx)
	for _, t := range terms {
		<-t.done // cancelled with ctx: released
	}
	stopListening()
	listening.Wait()
	r.metrics.held.WithLabelValues(r.name).Set(0)
}

// leave takes this process off the roster, so the others count one relay
// fewer as soon as its shards are released.
func (r *Relay) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.roster.Leave(ctx); err != nil {
		r.log.Warn("leave the relays' roster", zap.Error(err))
	}
}

// balance brings the shards this process publishes to its fair share
// (see share), handing back any beyond it and taking free or expired ones
// while it holds fewer.
func (r *Relay) balance(ctx context.Context, terms map[int]*term) {
	held := reap(terms)
	defer func() { r.metrics.held.WithLabelValues(r.name).Set(float64(reap(terms))) }()
	// The beat is not cut short by ctx: a beat cancelled mid-flight could
	// still commit after leave's delete and put a stopped relay back on the
	// roster for a whole TTL.
	beatCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	members, err := r.roster.Beat(beatCtx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("count live relays", zap.Error(err))
		}
		return
	}
	live, err := lease.Live(ctx, r.pool, LeaseSchema, leasePrefix(r.outbox.Table))
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("read shard leases", zap.Error(err))
		}
		return
	}
	share := r.share(members, live)
	if held > share {
		r.shed(terms, held-share)
		return
	}
	for _, sh := range r.preferred() {
		if held >= share || ctx.Err() != nil {
			return
		}
		if holder, taken := live[sh.lease.Name()]; terms[sh.index] != nil || (taken && holder != r.s.Holder) {
			continue
		}
		token, ok, err := sh.lease.Acquire(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			sh.log.Warn("acquire lease", zap.Error(err))
		case ok:
			terms[sh.index] = r.start(ctx, sh, token)
			held++
		}
	}
}

// share is how many shards this process should publish when members relays
// are live and live holds the live leases: n/members rounded up, so every
// shard has a relay. It is n/members rounded down while another relay has
// fewer than that and no shard is free, so the shards it lacks come free
// for it. (A dead relay still on the roster has no shards either, but its
// lapsed shards are free: the survivors keep theirs and take those.)
func (r *Relay) share(members int, live map[string]string) int {
	n := len(r.shards)
	lo, hi := n/members, (n+members-1)/members
	others, free := map[string]int{}, 0
	for _, sh := range r.shards {
		holder, ok := live[sh.lease.Name()]
		switch {
		case !ok:
			free++
		case holder != r.s.Holder:
			others[holder]++
		}
	}
	served := 0
	for _, held := range others {
		if held >= lo {
			served++
		}
	}
	if lo > 0 && served < members-1 && free == 0 {
		return lo
	}
	return hi
}

// start publishes sh under token in the background until its lease is lost
// or the term is cancelled.
func (r *Relay) start(ctx context.Context, sh *shard, token int64) *term {
	ctx, cancel := context.WithCancel(ctx)
	t := &term{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer cancel()
		r.lead(ctx, sh, token)
	}()
	return t
}

// shed hands n shards back, the highest first: each finishes its batches in
// flight and releases its lease for a relay with fewer than its share.
func (r *Relay) shed(terms map[int]*term, n int) {
	for i := len(r.shards) - 1; i >= 0 && n > 0; i-- {
		if t := terms[i]; t != nil && !t.stopping {
			r.shards[i].log.Info("handing the shard back to share the outbox")
			t.stopping = true
			t.cancel()
			n--
		}
	}
}

// reap forgets the terms that have ended and returns how many shards this
// process still publishes, not counting those being handed back.
func reap(terms map[int]*term) (held int) {
	for i, t := range terms {
		select {
		case <-t.done:
			delete(terms, i)
			continue
		default:
		}
		if !t.stopping {
			held++
		}
	}
	return held
}

// preferred lists the shards starting at one chosen by this process's
// holder id, so relays starting together go for different shards first.
func (r *Relay) preferred() []*shard {
	h := fnv.New32a()
	_, _ = h.Write([]byte(r.s.Holder))
	first := int(h.Sum32() % uint32(len(r.shards)))
	return append(r.shards[first:len(r.shards):len(r.shards)], r.shards[:first]...)
}
