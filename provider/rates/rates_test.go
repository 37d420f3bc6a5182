package rates

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestLoadAndLookBack(t *testing.T) {
	m, err := Load(strings.NewReader("code,date,value\nUSD,2026-11-27,40.1825\nUYI,2026-12-01,6.4123\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Saturday 2026-11-28 to Monday 2026-11-30 take Friday's rate.
	v, err := m.Rate(ctx, "USD", time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC))
	if err != nil || Thousandths(v) != 40183 {
		t.Fatalf("USD on Monday = %v, %v", v, err)
	}
	if _, err := m.Rate(ctx, "USD", time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ErrMissing) {
		t.Fatalf("8 days later: %v, want ErrMissing", err)
	}
	if _, err := m.Rate(ctx, "EUR", time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ErrMissing) {
		t.Fatalf("EUR: %v, want ErrMissing", err)
	}
	for _, bad := range []string{"USD,2026-11-27\n", "USD,27/11/2026,40\n", "USD,2026-11-27,-1\n", "DOLLAR,2026-11-27,40\n"} {
		if _, err := Load(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

type failing struct{}

func (failing) Rate(context.Context, string, time.Time) (*big.Rat, error) {
	return nil, errors.New("connection refused")
}

func TestChain(t *testing.T) {
	m := NewMemory()
	m.Set("USD", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), big.NewRat(40123, 1000))
	ctx, day := context.Background(), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if v, err := (Chain{NewMemory(), m}).Rate(ctx, "USD", day); err != nil || Thousandths(v) != 40123 {
		t.Fatalf("chain = %v, %v", v, err)
	}
	if _, err := (Chain{NewMemory(), NewMemory()}).Rate(ctx, "USD", day); !errors.Is(err, ErrMissing) {
		t.Fatalf("all missing: %v", err)
	}
	if _, err := (Chain{failing{}, NewMemory()}).Rate(ctx, "USD", day); err == nil || errors.Is(err, ErrMissing) {
		t.Fatalf("a failing source must not read as missing: %v", err)
	}
}
