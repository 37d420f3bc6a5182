package worker

import (
	"context"
	"testing"
	"time"
)

// forever is a poll or period no test waits out.
const forever = time.Hour

// loop is a loop under test: its context, heartbeat and calls (whether it
// beat before each).
type loop struct {
	ctx    context.Context
	cancel context.CancelFunc
	hb     *beat
	calls  chan bool
}

// newLoop returns a loop whose context carries a heartbeat.
func newLoop(tb testing.TB) *loop {
	tb.Helper()
	var b beats
	ctx, cancel := context.WithCancel(b.watch(context.Background(), "loop 1"))
	tb.Cleanup(cancel)
	return &loop{ctx: ctx, cancel: cancel, hb: b.all[0], calls: make(chan bool, 100)}
}

// called records a call and whether the loop beat since the previous one;
// it never blocks, so a fast loop cannot hang on a full channel.
func (l *loop) called() {
	select {
	case l.calls <- l.hb.last.Swap(0) != 0:
	default:
	}
}

// beforeEach fails unless the next n calls come, each after a beat.
func (l *loop) beforeEach(tb testing.TB, n int, what string) {
	tb.Helper()
	for i := range n {
		if !recv(tb, l.calls, what) {
			tb.Errorf("%s %d: no beat before it", what, i+1)
		}
	}
}

// stop ends the loop's context and waits for the loop to return.
func (l *loop) stop(tb testing.TB, done <-chan struct{}) {
	tb.Helper()
	l.cancel()
	recv(tb, done, "return after ctx ended")
}

// rounds is a round function that records each call and then answers the
// next value of more (false once more is empty).
func (l *loop) rounds(more ...bool) func(context.Context) bool {
	return func(context.Context) bool {
		l.called()
		if len(more) == 0 {
			return false
		}
		m := more[0]
		more = more[1:]
		return m
	}
}

// recv waits for one value from ch; the generous limit only turns a hang
// into a failure, it asserts no timing.
func recv[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		tb.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

// quiet fails with what if ch yields within 50 ms: a short look for
// something that must not happen, which can miss it but never fails wrongly.
func quiet[T any](tb testing.TB, ch <-chan T, what string) {
	tb.Helper()
	select {
	case <-ch:
		tb.Fatal(what)
	case <-time.After(50 * time.Millisecond):
	}
}

// run runs f in a goroutine; the returned channel closes when it returns.
func run(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return done
}

func TestDrainThenWait(t *testing.T) {
	t.Parallel()
	t.Run("drains while rounds report more, then waits for a wake-up", func(t *testing.T) {
		t.Parallel()
		l, wake := newLoop(t), make(chan struct{})
		done := run(func() { DrainThenWait(l.ctx, wake, forever, l.rounds(true, true, false)) })
		l.beforeEach(t, 3, "round")
		select {
		case <-l.calls:
			t.Fatal("a round ran after an idle one with neither a wake-up nor a poll")
		default:
		}
		wake <- struct{}{} // taken only by a waiting loop
		l.beforeEach(t, 1, "round after the wake-up")
		l.stop(t, done)
	})
	t.Run("polls without a wake-up and beats while idle", func(t *testing.T) {
		t.Parallel()
		l := newLoop(t)
		done := run(func() { DrainThenWait(l.ctx, nil, time.Millisecond, l.rounds()) })
		l.beforeEach(t, 3, "idle round")
		l.stop(t, done)
	})
	t.Run("stops when ctx ends while waiting", func(t *testing.T) {
		t.Parallel()
		l := newLoop(t)
		done := run(func() { DrainThenWait(l.ctx, nil, forever, l.rounds()) })
		l.beforeEach(t, 1, "first round")
		l.stop(t, done)
		if len(l.calls) != 0 {
			t.Errorf("%d rounds after ctx ended", len(l.calls))
		}
	})
}

func TestEvery(t *testing.T) {
	t.Parallel()
	t.Run("runs at once, then on its period, beating before each call", func(t *testing.T) {
		t.Parallel()
		l := newLoop(t)
		done := run(func() { Every(l.ctx, time.Millisecond, func(context.Context) { l.called() }) })
		l.beforeEach(t, 3, "call")
		l.stop(t, done)
	})
	t.Run("the first call does not wait for the period; ctx ends it", func(t *testing.T) {
		t.Parallel()
		l := newLoop(t)
		done := run(func() { Every(l.ctx, forever, func(context.Context) { l.called() }) })
		l.beforeEach(t, 1, "first call")
		l.stop(t, done)
		if len(l.calls) != 0 {
			t.Errorf("%d calls after ctx ended", len(l.calls))
		}
	})
}

func TestWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		d      time.Duration
		wake   bool
		cancel bool
	}{
		{"a wake-up", forever, true, false},
		{"the period", time.Millisecond, false, false},
		{"a negative period", -time.Second, false, false},
		{"the end of ctx", forever, false, true},
	} {
		t.Run("returns on "+tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			wake := make(chan struct{}, 1)
			if tc.wake {
				wake <- struct{}{}
			}
			if tc.cancel {
				cancel()
			}
			recv(t, run(func() { Wait(ctx, wake, tc.d) }), "return from Wait")
		})
	}
}

// claims is a claimer under test: each claim records itself and answers
// the next of its plans; a claim with work returns a work that blocks until
// released, reporting on started as it begins.
type claims struct {
	l       *loop
	plans   chan plan
	started chan int
	release chan struct{}
}

// plan is what one claim answers: whether it found work, and more.
type plan struct{ found, more bool }

func newClaims(l *loop) *claims {
	return &claims{l: l, plans: make(chan plan, 100), started: make(chan int, 100), release: make(chan struct{})}
}

// claim answers the next plan, or finds nothing when none is queued.
func (c *claims) claim(context.Context) (func(), bool) {
	c.l.called()
	var p plan
	select {
	case p = <-c.plans:
	default:
	}
	if !p.found {
		return nil, p.more
	}
	return func() {
		c.started <- 1
		<-c.release
	}, p.more
}

func TestClaimThenWork(t *testing.T) {
	t.Parallel()
	t.Run("works at most slots claims at once and claims again as one ends", func(t *testing.T) {
		t.Parallel()
		l := newLoop(t)
		c := newClaims(l)
		for range 5 {
			c.plans <- plan{found: true, more: true}
		}
		done := run(func() { ClaimThenWork(l.ctx, nil, forever, forever, 2, c.claim) }) // a full batch is followed at once, never by the linger
		l.beforeEach(t, 2, "claim")
		recv(t, c.started, "first work")
		recv(t, c.started, "second work")
		quiet(t, l.calls, "a third claim while both slots were busy")
		c.release <- struct{}{}
		l.beforeEach(t, 1, "claim once a slot is free")
		recv(t, c.started, "third work")
		close(c.release)
		l.stop(t, done)
	})
	t.Run("a claim that finds nothing frees its slot and waits for a wake-up", func(t *testing.T) {
		t.Parallel()
		l, wake := newLoop(t), make(chan struct{})
		c := newClaims(l)
		done := run(func() { ClaimThenWork(l.ctx, wake, forever, 0, 1, c.claim) })
		l.beforeEach(t, 1, "first claim")
		c.plans <- plan{found: true}
		wake <- struct{}{} // taken only by a waiting loop
		l.beforeEach(t, 1, "claim after the wake-up")
		recv(t, c.started, "work of the claim after the wake-up")
		close(c.release)
		l.stop(t, done)
	})
	t.Run("a wake-up buffered before a claim is taken by it", func(t *testing.T) {
		t.Parallel()
		l, wake := newLoop(t), make(chan struct{}, 1)
		wake <- struct{}{}
		c := newClaims(l)
		done := run(func() { ClaimThenWork(l.ctx, wake, forever, 0, 1, c.claim) })
		l.beforeEach(t, 1, "first claim")
		quiet(t, l.calls, "a second claim answered the wake-up the first had seen")
		l.stop(t, done)
	})
	t.Run("a wake-up is claimed once the linger has passed, and shutdown ends the linger", func(t *testing.T) {
		t.Parallel()
		l, wake := newLoop(t), make(chan struct{})
		c := newClaims(l)
		done := run(func() { ClaimThenWork(l.ctx, wake, forever, forever, 1, c.claim) })
		l.beforeEach(t, 1, "first claim")
		wake <- struct{}{} // taken only by a waiting loop
		quiet(t, l.calls, "a claim before the linger ended")
		l.stop(t, done)

		l, wake = newLoop(t), make(chan struct{})
		c = newClaims(l)
		done = run(func() { ClaimThenWork(l.ctx, wake, forever, time.Millisecond, 1, c.claim) })
		l.beforeEach(t, 1, "first claim")
		wake <- struct{}{}
		l.beforeEach(t, 1, "claim after the wake-up and the linger")
		l.stop(t, done)
	})
	t.Run("returns only once the work in hand is done", func(t *testing.T) {
		t.Parallel()
		l := newLoop(t)
		c := newClaims(l)
		c.plans <- plan{found: true}
		done := run(func() { ClaimThenWork(l.ctx, nil, forever, 0, 3, c.claim) })
		recv(t, c.started, "work")
		l.cancel()
		quiet(t, done, "returned while a claim was being worked")
		close(c.release)
		recv(t, done, "return after the work ended")
	})
}
