// Package notifier delivers a PSP sandbox's notifications the way a real
// PSP misbehaves: each in the background, retried on the PSP's schedule
// until the receiver answers 2xx, with seeded faults (duplicates, loss,
// delay, stale statuses, payments pending first). The sandboxes of dLocal,
// Stripe and Mercado Pago share it; each brings its own body and signature.
package notifier

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/onceflow/onceflow/pkg/backoff"
)

// Faults are the misbehaviours of a real PSP's notifications, drawn from a
// seeded generator so a run can be reproduced. The zero value delivers every
// notification once, at once.
type Faults struct {
	// Seed seeds the generator; 0 means 1.
	Seed uint64
	// DuplicateRate is the chance a notification is delivered more than
	// once: 2 to MaxCopies copies, each on its own schedule.
	DuplicateRate float64
	MaxCopies     int
	// DelayMax delays each copy by a uniform time in [0, DelayMax).
	DelayMax time.Duration
	// LossRate is the chance a notification is never sent at all.
	LossRate float64
	// StaleRate is the chance a paid payment's notification is followed,
	// later, by a stale one of an earlier status: the reordering a receiver
	// must survive.
	StaleRate float64
	// PendingFirstRate is the chance an approved payment starts pending and
	// turns paid PendingFor later, notifying both.
	PendingFirstRate float64
	PendingFor       time.Duration
	// TimeScale compresses the PSP's retry schedule (Config.Schedule):
	// 1/3600 turns an hour into a second. 0 retries every
	// Config.RetryDelay instead.
	TimeScale float64
}

// Attempt makes one delivery attempt to url, signed at the moment it is
// made, and returns the receiver's HTTP status.
type Attempt func(ctx context.Context, url string) (status int, err error)

// Config configures a Notifier.
type Config struct {
	Faults Faults
	// Schedule is the PSP's wait before each retry; its length plus one is
	// the number of attempts.
	Schedule []time.Duration
	// RetryDelay is the wait between attempts when Faults.TimeScale is 0.
	// Default: 1 s.
	RetryDelay time.Duration
	// Senders bounds the attempts in flight at once, as a PSP's pool of
	// delivery workers does; the others wait for one to finish. Default:
	// DefaultSenders.
	Senders int
	// Logger receives one entry per event, never bodies. Default: none.
	Logger *zap.Logger
}

// DefaultSenders is Config.Senders' default: as many attempts at once as
// ingest takes in by default (INGEST_WEBHOOK_MAX_IN_FLIGHT), so a burst of
// payments is delivered as fast as ingest records it rather than refused
// busy and retried in waves.
const DefaultSenders = 64

// Counts are a Notifier's attempts and injected faults so far.
type Counts struct {
	Sent, Failed int64 // attempts answered 2xx, and not (retries included)
	Lost         int64 // notifications dropped on purpose
	Extra        int64 // duplicate copies scheduled on purpose
	Stale        int64 // stale notifications scheduled after a paid one
	Waiting      int64 // attempts waiting now for a free sender (Config.Senders)
}

// Notifier sends notifications in the background; call Close when done.
type Notifier struct {
	cfg    Config
	log    *zap.Logger
	ctx    context.Context // cancelled by Close; bounds background work
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  *semaphore.Weighted // one per attempt in flight (Config.Senders)

	mu     sync.Mutex // guards closed and rnd
	closed bool
	rnd    *rand.Rand

	sent, failed, lost, extra, stale, waiting atomic.Int64
}

// New returns a Notifier, applying the defaults of Config.
func New(cfg Config) *Notifier {
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Senders <= 0 {
		cfg.Senders = DefaultSenders
	}
	seed := cfg.Faults.Seed
	if seed == 0 {
		seed = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Notifier{cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, slots: semaphore.NewWeighted(int64(cfg.Senders)),
		rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Faults returns the faults the Notifier draws from.
func (n *Notifier) Faults() Faults { return n.cfg.Faults }

// Chance reports true with probability p, from the seeded generator.
func (n *Notifier) Chance(p float64) bool {
	if p <= 0 {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rnd.Float64() < p
}

// PendingFirst draws whether an approved payment starts pending.
func (n *Notifier) PendingFirst() bool { return n.Chance(n.cfg.Faults.PendingFirstRate) }

// StaleAfterPaid draws whether a paid payment's notification is followed
// by a stale one, counting it when so.
func (n *Notifier) StaleAfterPaid() bool {
	if !n.Chance(n.cfg.Faults.StaleRate) {
		return false
	}
	n.stale.Add(1)
	return true
}

// copies is how many times the next notification is delivered; 0 is lost.
func (n *Notifier) copies() int {
	f := n.cfg.Faults
	if n.Chance(f.LossRate) {
		return 0
	}
	if f.MaxCopies < 2 || !n.Chance(f.DuplicateRate) {
		return 1
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return 2 + n.rnd.IntN(f.MaxCopies-1)
}

// delay is how long one copy waits before its first attempt.
func (n *Notifier) delay() time.Duration {
	if n.cfg.Faults.DelayMax <= 0 {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return time.Duration(n.rnd.Int64N(int64(n.cfg.Faults.DelayMax)))
}

// retryWait is the pause after failed attempt a (1-based).
func (n *Notifier) retryWait(a int) time.Duration {
	if n.cfg.Faults.TimeScale <= 0 || a > len(n.cfg.Schedule) {
		return n.cfg.RetryDelay
	}
	return max(time.Duration(float64(n.cfg.Schedule[a-1])*n.cfg.Faults.TimeScale), time.Millisecond)
}

// Notify delivers a notification to url in the background: as many copies
// as the faults draw (none when lost), each held back by wait and its own
// delay, and retried on the schedule until the receiver answers 2xx. kind
// and id name it in logs. An empty url or a closed Notifier sends nothing.
func (n *Notifier) Notify(wait time.Duration, kind, id, url string, attempt Attempt) {
	if url == "" {
		n.log.Info("notification skipped: no url", zap.String("kind", kind), zap.String("id", id))
		return
	}
	copies := n.copies()
	if copies == 0 {
		n.lost.Add(1)
		n.log.Info("notification lost on purpose", zap.String("kind", kind), zap.String("id", id))
		return
	}
	n.extra.Add(int64(copies - 1))
	for range copies {
		delay := wait + n.delay()
		n.Later(delay, func() { n.deliver(kind, id, url, attempt) })
	}
}

// Later runs fn in the background after wait, unless the Notifier is
// closed first.
func (n *Notifier) Later(wait time.Duration, fn func()) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.wg.Add(1)
	n.mu.Unlock()
	go func() {
		defer n.wg.Done()
		if backoff.Sleep(n.ctx, wait) {
			fn()
		}
	}()
}

// deliver runs the retry loop of one copy until success, exhaustion or
// Close.
func (n *Notifier) deliver(kind, id, url string, attempt Attempt) {
	last := len(n.cfg.Schedule) + 1
	for a := 1; ; a++ {
		if n.Try(n.ctx, kind, id, url, attempt) {
			return
		}
		if a == last {
			n.log.Warn("notification given up", zap.String("kind", kind), zap.String("id", id), zap.Int("attempts", last))
			return
		}
		if !backoff.Sleep(n.ctx, n.retryWait(a)) {
			return
		}
	}
}

// Try makes one attempt, as soon as one of Config.Senders is free, and
// reports whether the receiver answered 2xx; every attempt made counts.
func (n *Notifier) Try(ctx context.Context, kind, id, url string, attempt Attempt) bool {
	n.waiting.Add(1)
	err := n.slots.Acquire(ctx, 1)
	n.waiting.Add(-1)
	if err != nil {
		return false // ctx ended first: no attempt was made
	}
	status, err := attempt(ctx, url)
	n.slots.Release(1)
	if err == nil && status >= 200 && status < 300 {
		n.sent.Add(1)
		n.log.Debug("notification delivered", zap.String("kind", kind), zap.String("id", id), zap.Int("status", status))
		return true
	}
	n.failed.Add(1)
	n.log.Info("notification failed", zap.String("kind", kind), zap.String("id", id), zap.Int("status", status), zap.Error(err))
	return false
}

// Counts returns the counters so far.
func (n *Notifier) Counts() Counts {
	return Counts{Sent: n.sent.Load(), Failed: n.failed.Load(), Lost: n.lost.Load(), Extra: n.extra.Load(), Stale: n.stale.Load(),
		Waiting: n.waiting.Load()}
}

// Close stops every pending delivery and waits for them; idempotent.
// Later notifications are not sent.
func (n *Notifier) Close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.cancel()
	n.wg.Wait()
}
