// Package handoff hands work a process inserts straight to the loop of the
// same process that works it. A writer that finds room inserts its rows
// already claimed, under the handoff's lease token for its lease, and
// queues them here; the loop takes them with Take instead of claiming them
// from the table, which would lock and update each row once more. A row
// queued here is the database's like any other: should the process die
// before working it, its lease ends and any worker claims it.
package handoff

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Handoff queues at most a fixed number of rows of type T, each inserted
// claimed under its token.
type Handoff[T any] struct {
	token uuid.UUID
	lease time.Duration
	max   int

	mu       sync.Mutex
	queued   []leased[T]
	reserved int  // places reserved by inserts under way
	closed   bool // the loop has stopped: nothing more is queued
}

// leased is a row in the handoff and when its lease began (at the latest:
// the writer reads the clock before its insert).
type leased[T any] struct {
	item T
	at   time.Time
}

// New returns a handoff of at most max rows, each inserted under a lease
// of lease.
func New[T any](lease time.Duration, max int) *Handoff[T] {
	return &Handoff[T]{token: uuid.New(), lease: lease, max: max}
}

// Token is the lease token of every row the handoff holds.
func (h *Handoff[T]) Token() uuid.UUID { return h.token }

// Lease is how long a row's claim lasts from its insert.
func (h *Handoff[T]) Lease() time.Duration { return h.lease }

// Len is how many rows wait in the handoff.
func (h *Handoff[T]) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queued)
}

// Reserve reports whether n more rows fit, and counts them in until Fill,
// so that two inserts at once never overfill the handoff. A writer that
// reserved inserts its rows claimed and then calls Fill, whatever became of
// the insert.
func (h *Handoff[T]) Reserve(n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.queued)+h.reserved+n > h.max {
		return false
	}
	h.reserved += n
	return true
}

// Fill ends a reservation of n: it queues items, the rows inserted (at
// most n, none when the insert failed), leased at.
func (h *Handoff[T]) Fill(n int, items []T, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reserved -= n
	for _, it := range items {
		h.queued = append(h.queued, leased[T]{item: it, at: at})
	}
}

// Take removes up to n rows, oldest first, and returns them with the time
// the lease of the oldest began: their claim's time.
func (h *Handoff[T]) Take(n int) ([]T, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n = min(n, len(h.queued))
	if n == 0 {
		return nil, time.Time{}
	}
	out := make([]T, n)
	for k, q := range h.queued[:n] {
		out[k] = q.item
	}
	at := h.queued[0].at
	h.queued = h.queued[n:]
	return out, at
}

// Close ends the hand-offs when the loop stops: later rows are inserted
// unclaimed, for whichever worker claims them. Those still queued are
// claimed again once their lease ends.
func (h *Handoff[T]) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
}

// ReleaseTimeout bounds Stop's release.
const ReleaseTimeout = 5 * time.Second

// Stop closes h once its loop has stopped and worked every batch in hand,
// then runs release, which ends in the database the claims still held
// under h's token, so another process takes those rows at once rather than
// when their lease ends (a process killed outright leaves that to the
// lease). release runs on ctx without its cancellation, for at most
// ReleaseTimeout; Stop returns what it returns.
func (h *Handoff[T]) Stop(ctx context.Context, release func(context.Context, uuid.UUID) (int64, error)) (int64, error) {
	h.Close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	return release(ctx, h.token)
}
