package worker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStallAfter is how long a loop may go without a heartbeat before
// Stalled reports it, when a Group is given no other.
const DefaultStallAfter = 10 * time.Minute

type beatKey struct{}

// beat is one loop's last sign of life, in unix nanoseconds (0: none yet).
type beat struct {
	name string
	last atomic.Int64
}

// Beat records that the loop running with ctx is alive. Loops call it once
// per iteration, idle ones included; a loop run by a Group that has beaten
// once and then stops beating for longer than the stall timeout makes the
// Group stalled (and /healthz fail), so the orchestrator restarts a process
// whose worker is stuck. Outside a Group's loop it does nothing.
func Beat(ctx context.Context) {
	if b, ok := ctx.Value(beatKey{}).(*beat); ok {
		b.last.Store(time.Now().UnixNano())
	}
}

// beats are a group's loops, watched by Stalled.
type beats struct {
	mu         sync.Mutex
	all        []*beat
	stallAfter time.Duration
}

// watch returns ctx carrying a new heartbeat for the loop called name.
func (b *beats) watch(ctx context.Context, name string) context.Context {
	hb := &beat{name: name}
	b.mu.Lock()
	b.all = append(b.all, hb)
	b.mu.Unlock()
	return context.WithValue(ctx, beatKey{}, hb)
}

// stalled names the first loop whose last heartbeat is too old.
func (b *beats) stalled(now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	after := b.stallAfter
	if after <= 0 {
		after = DefaultStallAfter
	}
	for _, hb := range b.all {
		last := hb.last.Load()
		if last != 0 && now.Sub(time.Unix(0, last)) > after {
			return fmt.Errorf("%s has not made progress for %s", hb.name, now.Sub(time.Unix(0, last)).Round(time.Second))
		}
	}
	return nil
}
