// Package backoff computes retry delays: exponential growth from a base, a
// cap, and jitter between half the ceiling and the ceiling. It is stateless
// because the attempt count lives in the database rows being retried, not
// in a process. Sleep waits one out.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy describes an exponential backoff with jitter in [ceiling/2, ceiling].
type Policy struct {
	Base time.Duration // delay ceiling before the first retry
	Cap  time.Duration // the ceiling never grows past this
}

// Ceiling returns the upper bound of the delay after attempt failures
// (attempt counts from 1): Base·2^(attempt-1), at most Cap.
func (p Policy) Ceiling(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := p.Base
	for i := 1; i < attempt && d < p.Cap; i++ {
		d *= 2
	}
	return min(d, p.Cap)
}

// Delay returns a random delay in [Ceiling/2, Ceiling] so retries of many rows
// spread out instead of arriving together.
func (p Policy) Delay(attempt int) time.Duration {
	c := p.Ceiling(attempt)
	if c <= 1 {
		return c
	}
	half := c / 2
	return half + rand.N(c-half+1)
}

// Sleep waits for d, or until ctx ends, and reports whether ctx is still
// live. A d of zero or less returns at once.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
