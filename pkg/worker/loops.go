package worker

import (
	"context"
	"time"
)

// DrainThenWait runs round until ctx ends. While round reports that more
// work is due (a full batch) the next round starts at once; otherwise it
// waits for a wake-up on wake (a LISTEN/NOTIFY or an in-process nudge) or
// for poll, the fallback, whichever comes first. A failed round is the
// round's to log; it should report no more work due, so the loop backs off
// until the next wake-up or poll. It beats before every round, so an idle
// loop still beats once per poll.
func DrainThenWait(ctx context.Context, wake <-chan struct{}, poll time.Duration, round func(context.Context) (more bool)) {
	for ctx.Err() == nil {
		Beat(ctx)
		if round(ctx) {
			continue
		}
		Wait(ctx, wake, poll)
	}
}

// Wait blocks until a wake-up on wake, d, or the end of ctx. A nil wake
// never wakes; a negative d counts as zero.
func Wait(ctx context.Context, wake <-chan struct{}, d time.Duration) {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
}

// Every calls fn at once and then on every tick of a d ticker until ctx
// ends, beating before each call; a call that outlasts d is followed at
// once by the next, and the ticks it missed are dropped. fn logs its own
// failures.
func Every(ctx context.Context, d time.Duration, fn func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		Beat(ctx)
		fn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
