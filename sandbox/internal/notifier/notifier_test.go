package notifier

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/testwait"
)

// recorder is an Attempt that answers the statuses it is given in turn
// (then 200) and counts the attempts per url.
type recorder struct {
	mu       sync.Mutex
	answers  []int
	attempts map[string]int
}

func (r *recorder) attempt(_ context.Context, url string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.attempts == nil {
		r.attempts = map[string]int{}
	}
	r.attempts[url]++
	if len(r.answers) == 0 {
		return 200, nil
	}
	status := r.answers[0]
	r.answers = r.answers[1:]
	if status == 0 {
		return 0, errors.New("connection refused")
	}
	return status, nil
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, a := range r.attempts {
		n += a
	}
	return n
}

// Loss and duplicates follow the seed: two notifiers with one seed make
// the same draws, and every copy that is not lost arrives.
func TestDuplicatesAndLossFollowTheSeed(t *testing.T) {
	t.Parallel()
	run := func() (Counts, int) {
		n := New(Config{Faults: Faults{Seed: 7, DuplicateRate: 0.5, MaxCopies: 3, LossRate: 0.2}})
		defer n.Close()
		var rc recorder
		for range 50 {
			n.Notify(0, "payment", "p", "http://receiver", rc.attempt)
		}
		want := 0
		testwait.Until(t, 5*time.Second, 5*time.Millisecond, "every copy delivered", func() bool {
			c := n.Counts()
			want = 50 - int(c.Lost) + int(c.Extra)
			return rc.total() == want
		})
		return n.Counts(), rc.total()
	}
	a, gotA := run()
	b, gotB := run()
	if a.Lost == 0 || a.Extra == 0 {
		t.Fatalf("counts = %+v, want some lost and some extra copies", a)
	}
	if a != b || gotA != gotB {
		t.Fatalf("same seed, different runs: %+v (%d) vs %+v (%d)", a, gotA, b, gotB)
	}
}

// A copy is retried until the receiver answers 2xx, and given up after the
// schedule's attempts.
func TestRetriesUntil2xxThenGivesUp(t *testing.T) {
	t.Parallel()
	n := New(Config{Faults: Faults{TimeScale: 1e-9}, Schedule: []time.Duration{time.Hour, time.Hour}})
	defer n.Close()
	ok := recorder{answers: []int{500, 0}}
	n.Notify(0, "payment", "p", "http://ok", ok.attempt)
	testwait.Until(t, 5*time.Second, 5*time.Millisecond, "the third attempt", func() bool { return n.Counts().Sent == 1 })
	if got := n.Counts(); got.Failed != 2 || ok.total() != 3 {
		t.Fatalf("counts = %+v after %d attempts, want 2 failed then 1 sent", got, ok.total())
	}

	down := recorder{answers: []int{503, 503, 503, 503}}
	n.Notify(0, "payment", "p", "http://down", down.attempt)
	testwait.Until(t, 5*time.Second, 5*time.Millisecond, "the last attempt", func() bool { return n.Counts().Failed == 5 })
	n.Close() // waits for the copy's goroutine: no attempt after the last
	if down.total() != 3 {
		t.Fatalf("attempts = %d, want 3 (one, then the schedule's two retries)", down.total())
	}
}

// The pending-first and stale draws follow their rates, and stale ones are
// counted; an empty URL sends nothing.
func TestRatesAndNoURL(t *testing.T) {
	t.Parallel()
	always := New(Config{Faults: Faults{PendingFirstRate: 1, StaleRate: 1}})
	never := New(Config{})
	defer always.Close()
	defer never.Close()
	if !always.PendingFirst() || !always.StaleAfterPaid() || never.PendingFirst() || never.StaleAfterPaid() {
		t.Fatal("the draws do not follow rates 1 and 0")
	}
	if always.Counts().Stale != 1 || never.Counts().Stale != 0 {
		t.Fatalf("stale counted %d and %d, want 1 and 0", always.Counts().Stale, never.Counts().Stale)
	}
	var rc recorder
	never.Notify(0, "payment", "p", "", rc.attempt)
	never.Close()
	if rc.total() != 0 {
		t.Fatalf("attempts = %d to an empty URL, want none", rc.total())
	}
}

// Close cancels a delivery still waiting and refuses later ones.
func TestCloseStopsDeliveries(t *testing.T) {
	t.Parallel()
	n := New(Config{})
	var rc recorder
	n.Notify(time.Hour, "payment", "p", "http://later", rc.attempt)
	n.Close()
	n.Notify(0, "payment", "p", "http://after", rc.attempt)
	n.Later(0, func() { t.Error("work ran after Close") })
	if rc.total() != 0 {
		t.Fatalf("attempts = %d, want none after Close", rc.total())
	}
}

// At most Config.Senders attempts are in flight at once; the others wait
// for a sender and are all made once the first finish.
func TestSendersBoundTheAttemptsInFlight(t *testing.T) {
	t.Parallel()
	const senders, notes = 3, 30
	n := New(Config{Senders: senders})
	defer n.Close()
	arrived, gate := make(chan struct{}, notes), make(chan struct{})
	attempt := func(context.Context, string) (int, error) {
		arrived <- struct{}{}
		<-gate
		return 200, nil
	}
	for range notes {
		n.Notify(0, "payment", "p", "http://receiver", attempt)
	}
	testwait.Until(t, 5*time.Second, time.Millisecond, "all but Senders attempts waiting for a sender", func() bool {
		return n.Counts().Waiting == notes-senders
	})
	testwait.Until(t, 5*time.Second, time.Millisecond, "Senders attempts made", func() bool { return len(arrived) == senders })
	if got, waiting := len(arrived), n.Counts().Waiting; got != senders || waiting != notes-senders {
		t.Fatalf("%d attempts in flight and %d waiting, want %d (Senders) and %d", got, waiting, senders, notes-senders)
	}
	close(gate)
	testwait.Until(t, 5*time.Second, time.Millisecond, "every notification delivered", func() bool { return n.Counts().Sent == notes })
	if c := n.Counts(); c.Waiting != 0 || c.Failed != 0 {
		t.Fatalf("counts = %+v, want none waiting or failed", c)
	}
}
