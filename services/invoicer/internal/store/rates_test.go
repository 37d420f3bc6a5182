package store_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/rates"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// The invoicer's rate source reads invoicer.rates (a weekend takes
// Friday's value), asks upstream only for what the table lacks, and keeps
// upstream's answer, which later answers cannot change; an operator's file
// replaces a value.
func TestRatesTableThenUpstream(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	friday, monday := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	if err := env.Store.SaveRate(ctx, "USD", friday, big.NewRat(40123, 1000), "file", true); err != nil {
		t.Fatal(err)
	}
	up := rates.NewMemory()
	up.Lookback = 0
	up.Set("EUR", monday, big.NewRat(45, 1))
	src := store.Rates{Store: env.Store, Upstream: up, Name: "bcu"}
	if v, err := src.Rate(ctx, "USD", friday.AddDate(0, 0, 2)); err != nil || v.Cmp(big.NewRat(40123, 1000)) != 0 {
		t.Fatalf("USD on Sunday = %v, %v; want Friday's 40.123", v, err)
	}
	if v, err := src.Rate(ctx, "EUR", monday); err != nil || v.Cmp(big.NewRat(45, 1)) != 0 {
		t.Fatalf("EUR from upstream = %v, %v", v, err)
	}
	up.Set("EUR", monday, big.NewRat(50, 1))
	if v, err := src.Rate(ctx, "EUR", monday); err != nil || v.Cmp(big.NewRat(45, 1)) != 0 {
		t.Fatalf("EUR again = %v, %v; want the kept 45", v, err)
	}
	if err := env.Store.SaveRate(ctx, "EUR", monday, big.NewRat(46, 1), "bcu", false); err != nil {
		t.Fatal(err)
	}
	if v, _ := src.Rate(ctx, "EUR", monday); v.Cmp(big.NewRat(45, 1)) != 0 {
		t.Fatalf("a later source answer replaced the kept value: %v", v)
	}
	if err := env.Store.SaveRate(ctx, "EUR", monday, big.NewRat(47, 1), "file", true); err != nil {
		t.Fatal(err)
	}
	if v, _ := src.Rate(ctx, "EUR", monday); v.Cmp(big.NewRat(47, 1)) != 0 {
		t.Fatalf("an operator's file did not replace the value: %v", v)
	}
	if _, err := src.Rate(ctx, "BRL", monday); !errors.Is(err, rates.ErrMissing) {
		t.Fatalf("BRL = %v, want ErrMissing", err)
	}
}
