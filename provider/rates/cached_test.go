package rates

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"
)

// counting is a Source that counts its calls and answers from a Memory.
type counting struct {
	m     *Memory
	calls int
}

func (c *counting) Rate(ctx context.Context, code string, day time.Time) (*big.Rat, error) {
	c.calls++
	return c.m.Rate(ctx, code, day)
}

// A value is asked once per code and day while kept; a missing one is
// asked every time, so it is used once published; a caller changing the
// value it got changes nothing kept.
func TestCachedKeepsValuesNotMisses(t *testing.T) {
	t.Parallel()
	src := &counting{m: NewMemory()}
	day := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	src.m.Set("USD", day, big.NewRat(40123, 1000))
	c := NewCached(src, time.Hour)
	ctx := context.Background()
	for range 3 {
		v, err := c.Rate(ctx, "USD", day.Add(-time.Hour)) // the same calendar day
		if err != nil || v.Cmp(big.NewRat(40123, 1000)) != 0 {
			t.Fatalf("USD = %v (%v), want 40.123", v, err)
		}
		v.SetInt64(0)
	}
	if src.calls != 1 {
		t.Fatalf("source asked %d times for one code and day, want once", src.calls)
	}
	if _, err := c.Rate(ctx, UI, day); !errors.Is(err, ErrMissing) {
		t.Fatalf("UI: %v, want ErrMissing", err)
	}
	src.m.Set(UI, day, big.NewRat(64123, 10000))
	if v, err := c.Rate(ctx, UI, day); err != nil || v.Cmp(big.NewRat(64123, 10000)) != 0 {
		t.Fatalf("UI once published = %v (%v), want 6.4123", v, err)
	}
	if src.calls != 3 {
		t.Fatalf("source asked %d times, want 3 (USD once, the missing UI, the published UI)", src.calls)
	}
}

// A kept value is asked again once its time is up.
func TestCachedForgetsAfterItsTime(t *testing.T) {
	t.Parallel()
	src := &counting{m: NewMemory()}
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	src.m.Set("USD", day, big.NewRat(40, 1))
	c := NewCached(src, time.Millisecond)
	if _, err := c.Rate(context.Background(), "USD", day); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for src.calls < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		if _, err := c.Rate(context.Background(), "USD", day); err != nil {
			t.Fatal(err)
		}
	}
	if src.calls < 2 {
		t.Fatalf("source asked %d times in a minute with a 1 ms cache, want the value asked again", src.calls)
	}
}
