package rates

import (
	"context"
	"errors"
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
