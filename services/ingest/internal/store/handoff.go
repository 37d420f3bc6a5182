package store

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// Handoff hands the receipts this process inserts straight to its apply
// worker. A grouped insert that finds room in the handoff inserts its
// receipts already claimed, under the handoff's token for the worker's
// lease, and queues them here; the worker takes them with Take instead of
// claiming them from the table, which would lock and update each row once
// more. A receipt queued here is the database's like any other: should the
// process die before working it, its lease ends and any worker claims it.
type Handoff struct {
	token uuid.UUID
	lease time.Duration
	max   int

	mu       sync.Mutex
	queued   []leased
	reserved int  // places reserved by inserts under way
	closed   bool // the worker has stopped: nothing more is queued
}

// leased is a receipt in the handoff and when its lease began (at the
// latest: the clock is read before the insert).
type leased struct {
	r  Receipt
	at time.Time
}

// NewHandoff returns a handoff of at most max receipts, each inserted
// under a lease of lease.
func NewHandoff(lease time.Duration, max int) *Handoff {
	return &Handoff{token: uuid.New(), lease: lease, max: max}
}

// Token is the lease token of every receipt the handoff holds.
func (i *Handoff) Token() uuid.UUID { return i.token }

// Len is how many receipts wait in the handoff.
func (i *Handoff) Len() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.queued)
}

// Close ends the hand-offs when the worker stops: later receipts are
// inserted unclaimed, for whichever worker claims them. Those still queued
// are claimed again once their lease ends.
func (i *Handoff) Close() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.closed = true
}

// Take removes up to n receipts, oldest first, and returns them with the
// time the lease of the oldest began: their claim's time.
func (i *Handoff) Take(n int) ([]Receipt, time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	n = min(n, len(i.queued))
	if n == 0 {
		return nil, time.Time{}
	}
	out := make([]Receipt, n)
	for k, q := range i.queued[:n] {
		out[k] = q.r
	}
	at := i.queued[0].at
	i.queued = i.queued[n:]
	return out, at
}

// reserve reports whether n more receipts fit, and counts them in until
// fill, so that two inserts at once never overfill the handoff.
func (i *Handoff) reserve(n int) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed || len(i.queued)+i.reserved+n > i.max {
		return false
	}
	i.reserved += n
	return true
}

// fill ends a reservation of n: it queues rs, the receipts inserted (at
// most n), leased at.
func (i *Handoff) fill(n int, rs []Receipt, at time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.reserved -= n
	for _, r := range rs {
		i.queued = append(i.queued, leased{r: r, at: at})
	}
}
