package app

import (
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/rates"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
)

// INVOICER_RATES_FILE is loaded into invoicer.rates at start; with
// INVOICER_BCU_URL=off nothing else is asked, and a bad file stops the
// start naming the variable.
func TestRatesFileIsLoaded(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "rates.csv")
	if err := os.WriteFile(path, []byte("code,date,value\nUSD,2026-12-01,40.123\nUYI,2026-12-01,6.4123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src, err := rateSource(ctx, Config{RatesFile: path, BCUURL: "off"}, env.Store)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if v, err := src.Rate(ctx, "USD", day); err != nil || v.Cmp(big.NewRat(40123, 1000)) != 0 {
		t.Fatalf("USD = %v, %v", v, err)
	}
	if v, err := src.Rate(ctx, rates.UI, day); err != nil || v.Cmp(big.NewRat(64123, 10000)) != 0 {
		t.Fatalf("UI = %v, %v", v, err)
	}
	if _, err := src.Rate(ctx, "EUR", day); !errors.Is(err, rates.ErrMissing) {
		t.Fatalf("EUR = %v, want ErrMissing with BCU off", err)
	}
	if err := os.WriteFile(path, []byte("USD,2026-12-01,forty\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := rateSource(ctx, Config{RatesFile: path, BCUURL: "off"}, env.Store); err == nil || !strings.Contains(err.Error(), "INVOICER_RATES_FILE") {
		t.Fatalf("malformed rates file: %v, want an error naming INVOICER_RATES_FILE", err)
	}
}
