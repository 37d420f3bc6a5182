package emit_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/cases"
	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/provider/rates"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// usd is a payment of amountMinor US cents.
func usd(id string, amountMinor int64, rut bool) *eventsv1.BillingEvent {
	ev := invoicertest.Payment(id, amountMinor, rut)
	ev.Currency = "USD"
	return ev
}

// A USD e-Factura is sent with the dollar's rate of its date, fixed on the
// document; the sandbox, which refuses a CFE in USD without TpoCambio,
// issues it.
func TestForeignCurrencyCarriesItsFixedRate(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, usd("pay-usd", 99_98, true))
	w := newWorker(t, env, fast(t), 5*time.Second)

	d = until(t, env, w, d.Reference, settled)
	if d.Status != fiscal.StatusAuthorized || d.ExchangeRateMilli == nil || *d.ExchangeRateMilli != 40123 {
		t.Fatalf("status %s, rate %v; want authorized at 40.123", d.Status, d.ExchangeRateMilli)
	}
	docs := env.Sandbox.Documents()
	if len(docs) != 1 || docs[0].Currency != "USD" || docs[0].ExchangeRate != "40.123" {
		t.Fatalf("sandbox holds %+v, want one USD CFE at 40.123", docs)
	}
}

// A rate once fixed is what every later send carries, even when the source
// has another one by then.
func TestFixedRateSurvivesRetries(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, usd("pay-usd-retry", 50_00, true))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{FailBefore: 1})
	cfg := fast(t)
	cfg.Settle = 0
	w := newWorker(t, env, cfg, 5*time.Second)
	if _, err := w.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := env.Document(t, d.Reference); got.ExchangeRateMilli == nil || *got.ExchangeRateMilli != 40123 {
		t.Fatalf("rate after the first attempt %v, want 40123", got.ExchangeRateMilli)
	}
	other := rates.NewMemory()
	other.Set("USD", time.Now().In(fiscal.Montevideo), big.NewRat(45, 1))
	other.Set(rates.UI, time.Now().In(fiscal.Montevideo), big.NewRat(6, 1))
	cfg.Rates = other
	w = newWorker(t, env, cfg, 5*time.Second)
	d = until(t, env, w, d.Reference, settled)
	if docs := env.Sandbox.Documents(); d.Status != fiscal.StatusAuthorized || len(docs) != 1 || docs[0].ExchangeRate != "40.123" {
		t.Fatalf("status %s, sandbox %+v; want the first rate, 40.123, sent", d.Status, docs)
	}
}

// Without a rate for the document's date nothing is sent and an
// exchange_rate_missing case is opened; once the rate is in the table the
// document goes out with it.
func TestMissingRateOpensACase(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, usd("pay-usd-norate", 10_00, false))
	cfg := fast(t)
	cfg.Rates = store.Rates{Store: env.Store}
	w := newWorker(t, env, cfg, 5*time.Second)
	if _, err := w.Round(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := env.Document(t, d.Reference)
	c, err := env.Store.OpenCaseOf(context.Background(), cases.ExchangeRateMissing, store.DocumentSubject(d.ID))
	if err != nil || got.Status != fiscal.StatusPending || got.ExchangeRateMilli != nil || len(env.Sandbox.Documents()) != 0 {
		t.Fatalf("status %s, rate %v, case %v (%v), %d sent; want pending, no rate, a case, nothing sent",
			got.Status, got.ExchangeRateMilli, c.ID, err, len(env.Sandbox.Documents()))
	}
	if !strings.Contains(deref(got.LastError), "no exchange rate for USD") {
		t.Fatalf("last error %q", deref(got.LastError))
	}
	today := time.Now().In(fiscal.Montevideo)
	for _, code := range []string{"USD", rates.UI} {
		if err := env.Store.SaveRate(context.Background(), code, today, big.NewRat(39875, 1000), "test", true); err != nil {
			t.Fatal(err)
		}
	}
	d = until(t, env, w, d.Reference, settled)
	if d.Status != fiscal.StatusAuthorized || *d.ExchangeRateMilli != 39875 {
		t.Fatalf("status %s rate %v, want authorized at 39.875", d.Status, d.ExchangeRateMilli)
	}
}

// A USD e-Ticket under 5,000 UI (excluding VAT, in UYU at its rate) is
// issued after 48 polls like a UYU one; a larger one keeps being polled.
func TestSmallUSDETicketIsIssuedAfter48Polls(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	// USD 100 is UYU 4,012.30; excluding VAT 3,288.77, under 32,061.50.
	small := env.Record(t, usd("pay-usd-small", 100_00, false))
	// USD 1,000 excluding VAT is USD 819.67, UYU 32,887.30: over.
	large := env.Record(t, identified(usd("pay-usd-large", 1_000_00, false)))
	env.Sandbox.SetRule(fiscalsim.AnyReference, fiscalsim.Rule{PendingPolls: -1})
	w := newWorker(t, env, fast(t), 5*time.Second)

	got := until(t, env, w, small.Reference, settled)
	if got.Status != fiscal.StatusIssued || got.DGIPolls != 48 {
		t.Fatalf("small USD e-Ticket %s after %d polls, want issued after 48", got.Status, got.DGIPolls)
	}
	d := until(t, env, w, large.Reference, func(d store.Document) bool { return d.DGIPolls >= 52 })
	if d.Status != fiscal.StatusPendingDGI {
		t.Fatalf("large USD e-Ticket %s after %d polls, want still pending_dgi", d.Status, d.DGIPolls)
	}
}

// An e-Ticket whose lines are exempt is small by its amount excluding VAT:
// UYU 35,000 exempt is over 5,000 UI (32,061.50), UYU 35,000 at 22 % is
// 28,688.52 without VAT, under it.
func TestThresholdComparesAmountExcludingVAT(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	taxed := env.Record(t, invoicertest.Payment("pay-taxed", 35_000_00, false))
	ev := identified(invoicertest.Payment("pay-exempt", 35_000_00, false))
	ev.Lines[0].Vat = "exempt"
	exempt := env.Record(t, ev)
	env.Sandbox.SetRule(fiscalsim.AnyReference, fiscalsim.Rule{PendingPolls: -1})
	w := newWorker(t, env, fast(t), 5*time.Second)

	if got := until(t, env, w, taxed.Reference, settled); got.Status != fiscal.StatusIssued {
		t.Fatalf("taxed e-Ticket %s, want issued", got.Status)
	}
	if d := until(t, env, w, exempt.Reference, func(d store.Document) bool { return d.DGIPolls >= 50 }); d.Status != fiscal.StatusPendingDGI {
		t.Fatalf("exempt e-Ticket %s, want still pending_dgi", d.Status)
	}
}

// A CFE DGI accepts with remarks is observed: final, announced as valid,
// and an invoice observed lets its credit note go out.
func TestObservedIsValidAndFinal(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	inv := env.Record(t, invoicertest.Payment("pay-obs", 1_220_00, false))
	note := env.Record(t, invoicertest.Refund("ref-obs", "pay-obs", 220_00))
	env.Sandbox.SetRule(inv.Reference, fiscalsim.Rule{Observe: true})
	statuses := invoicy.DefaultStatusMap()
	statuses["8"] = fiscal.StatusObserved
	client, err := invoicy.New(invoicy.Config{BaseURL: env.BaseURL, EmpCodigo: invoicertest.EmpCodigo, EmpPK: invoicertest.EmpPK,
		AccessKey: invoicertest.AccessKey, Timeout: 5 * time.Second, StatusMap: statuses}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	w := worker{Emitter: emit.New(env.Store, client, zaptest.NewLogger(t), reg, fast(t)), reg: reg}

	note = until(t, env, w, note.Reference, settled)
	inv = env.Document(t, inv.Reference)
	if inv.Status != fiscal.StatusObserved || note.Status != fiscal.StatusAuthorized {
		t.Fatalf("invoice %s, credit note %s; want observed and authorized", inv.Status, note.Status)
	}
	for range 2 {
		if _, err := w.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := env.Document(t, inv.Reference); got.Status != fiscal.StatusObserved || env.Sandbox.CountByReference(inv.Reference) != 1 {
		t.Fatalf("observed invoice moved to %s or was sent again", got.Status)
	}
	keys := strings.Join(env.Outbox(t), " ")
	if !strings.Contains(keys, "document:"+inv.Reference+":authorized") {
		t.Fatalf("outbox %s, want the observed invoice announced as valid", keys)
	}
}

type downSource struct{}

func (downSource) Rate(context.Context, string, time.Time) (*big.Rat, error) {
	return nil, errors.New("connection refused")
}

// A rate source that keeps failing opens the exchange_rate_missing case
// after RefusedCaseAfter attempts instead of retrying in silence.
func TestFailingRateSourceOpensACase(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, usd("pay-usd-down", 10_00, false))
	cfg := fast(t)
	cfg.Rates, cfg.RefusedCaseAfter = downSource{}, 3
	w := newWorker(t, env, cfg, 5*time.Second)
	subject := store.DocumentSubject(d.ID)
	for i := range 3 {
		if _, err := env.Store.OpenCaseOf(context.Background(), cases.ExchangeRateMissing, subject); err == nil {
			t.Fatalf("case opened after %d attempts, want after 3", i)
		}
		if _, err := env.Pool.Exec(context.Background(), `UPDATE invoicer.fiscal_documents SET due_at = now() WHERE id = $1`, d.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Store.OpenCaseOf(context.Background(), cases.ExchangeRateMissing, subject); err != nil {
		t.Fatalf("no exchange_rate_missing case after 3 failing attempts: %v", err)
	}
	if got := env.Document(t, d.Reference); got.Status != fiscal.StatusPending || len(env.Sandbox.Documents()) != 0 {
		t.Fatalf("status %s with %d sent, want pending and nothing sent", got.Status, len(env.Sandbox.Documents()))
	}
}
