package pspsim

import (
	"math/rand/v2"
	"sync"
	"time"
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
	// StaleRate is the chance a PAID payment's notification is followed,
	// later, by a stale PENDING one: the reordering a receiver must survive.
	StaleRate float64
	// PendingFirstRate is the chance an approved payment starts PENDING and
	// turns PAID PendingFor later, notifying both.
	PendingFirstRate float64
	PendingFor       time.Duration
	// TimeScale compresses dLocal's retry schedule (hourly for 6 hours, then
	// every 12 hours, 12 attempts in all): 1/3600 turns an hour into a
	// second. 0 retries every Config.RetryDelay instead.
	TimeScale float64
}

// dlocalSchedule is the wait before each retry of dLocal's notifications.
var dlocalSchedule = []time.Duration{
	time.Hour, time.Hour, time.Hour, time.Hour, time.Hour, time.Hour,
	12 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour,
}

// dice draws the faults' random decisions; safe for concurrent use.
type dice struct {
	mu  sync.Mutex
	rnd *rand.Rand
	f   Faults
}

func newDice(f Faults) *dice {
	seed := f.Seed
	if seed == 0 {
		seed = 1
	}
	return &dice{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), f: f}
}

func (d *dice) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rnd.Float64() < p
}

// copies is how many times the next notification is delivered; 0 is lost.
func (d *dice) copies() int {
	if d.chance(d.f.LossRate) {
		return 0
	}
	if d.f.MaxCopies < 2 || !d.chance(d.f.DuplicateRate) {
		return 1
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return 2 + d.rnd.IntN(d.f.MaxCopies-1)
}

// delay is how long one copy waits before its first attempt.
func (d *dice) delay() time.Duration {
	if d.f.DelayMax <= 0 {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Duration(d.rnd.Int64N(int64(d.f.DelayMax)))
}

// retryWait is the pause after failed attempt n (1-based).
func (d *dice) retryWait(n int, fallback time.Duration) time.Duration {
	if d.f.TimeScale <= 0 || n > len(dlocalSchedule) {
		return fallback
	}
	return max(time.Duration(float64(dlocalSchedule[n-1])*d.f.TimeScale), time.Millisecond)
}
