package backoff_test

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
)

func TestCeilingDoublesUpToCap(t *testing.T) {
	t.Parallel()
	p := backoff.Policy{Base: time.Second, Cap: 10 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := p.Ceiling(i + 1); got != w {
			t.Errorf("Ceiling(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := p.Ceiling(1000); got != 10*time.Second {
		t.Errorf("Ceiling(1000) = %v, want the cap", got)
	}
}

func TestDelayStaysWithinJitterBounds(t *testing.T) {
	t.Parallel()
	p := backoff.Policy{Base: 100 * time.Millisecond, Cap: time.Minute}
	for attempt := 1; attempt <= 12; attempt++ {
		c := p.Ceiling(attempt)
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.Delay(attempt)
			if d < c/2 || d > c {
				t.Fatalf("Delay(%d) = %v, outside [%v, %v]", attempt, d, c/2, c)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Fatalf("Delay(%d) never varied: no jitter", attempt)
		}
	}
}

func TestSleepStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if !backoff.Sleep(ctx, time.Millisecond) || !backoff.Sleep(ctx, 0) {
		t.Fatal("Sleep on a live context reported it done")
	}
	cancel()
	if backoff.Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on a cancelled context reported it live")
	}
}
