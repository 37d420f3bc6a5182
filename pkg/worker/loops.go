package worker

import (
	"context"
	"sync"
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

// ClaimThenWork is DrainThenWait with one claimer and several workers: a
// single loop claims work and hands each claim to a goroutine of its own,
// at most slots at once. It claims only while a slot is free, so no claim
// waits under its lease for a worker, and only one loop answers each
// wake-up, so workers never race each other to a claim that finds nothing.
// claim returns the claim's work, nil when it found none, and whether more
// is due at once (a full batch); otherwise the loop waits for a wake-up or
// poll, then lingers for linger before it claims, so work that arrives
// meanwhile shares the claim: at a steady trickle each item would
// otherwise be claimed, and its statements run, on its own. A wake-up
// already buffered when a claim begins is taken by it: the claim sees what
// woke it. ClaimThenWork beats before every claim and returns once ctx has
// ended and every claim in hand has been worked.
func ClaimThenWork(ctx context.Context, wake <-chan struct{}, poll, linger time.Duration, slots int, claim func(context.Context) (work func(), more bool)) {
	free := make(chan struct{}, slots)
	for range slots {
		free <- struct{}{}
	}
	var inHand sync.WaitGroup
	defer inHand.Wait()
	for ctx.Err() == nil {
		Beat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-free:
		}
		drain(wake)
		work, more := claim(ctx)
		if work == nil {
			free <- struct{}{}
		} else {
			inHand.Go(func() {
				defer func() { free <- struct{}{} }()
				work()
			})
		}
		if !more {
			Wait(ctx, wake, poll)
			Wait(ctx, nil, linger)
		}
	}
}

// drain takes a wake-up buffered in wake, if any, without waiting.
func drain(wake <-chan struct{}) {
	select {
	case <-wake:
	default:
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
