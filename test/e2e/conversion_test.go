package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestChargedInAnotherCurrencyIsInvoicedInIt drives a UYU order that the
// customer paid in dollars at Stripe (Adaptive Pricing: the PaymentIntent
// stays UYU 4,012.30, presentment_details says USD 100.00) through every
// service: ingest matches the amount converted from against the order and
// the fiscal sandbox ends up holding one authorized e-Ticket in USD for
// 100.00 with the dollar's rate of the day as TpoCambio. A third of the
// payment refunded at Stripe (in pesos, with its dollars in the refund's
// presentment_details) becomes one credit note in USD for 33.33.
func TestChargedInAnotherCurrencyIsInvoicedInIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := startStack(ctx, t, stack.Options{})

	order := fmt.Sprintf("e2e-fx-%d", time.Now().UnixNano())
	total, err := s.Order(ctx, order, "UYU", []stack.Line{{Description: "Plan", Quantity: 1, UnitMinor: 4_012_30}})
	if err != nil {
		t.Fatal(err)
	}
	payment, err := s.PayStripePresented(ctx, order, total, "UYU", 100_00, "USD", s.IngestURL)
	if err != nil {
		t.Fatal(err)
	}
	source := "payment:" + payment
	if err := s.WaitAuthorized(ctx, source, time.Minute); err != nil {
		t.Fatal(err)
	}
	docs, err := s.Documents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := stack.BySource(docs)[source]
	if len(held) != 1 || held[0].Currency != "USD" || held[0].Total != "100.00" || held[0].ExchangeRate != stack.DemoUSDRate {
		t.Fatalf("fiscal sandbox holds %+v for %s, want one document in USD for 100.00 at TpoCambio %s", held, source, stack.DemoUSDRate)
	}

	refund, err := s.RefundAt(ctx, "stripe", payment, 1_337_43, s.IngestURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAuthorized(ctx, "refund:"+refund, time.Minute); err != nil {
		t.Fatal(err)
	}
	if docs, err = s.Documents(ctx); err != nil {
		t.Fatal(err)
	}
	notes := stack.BySource(docs)["refund:"+refund]
	if len(notes) != 1 || notes[0].Type != 102 || notes[0].Currency != "USD" || notes[0].Total != "33.33" || notes[0].ExchangeRate != stack.DemoUSDRate {
		t.Fatalf("fiscal sandbox holds %+v for refund %s, want one e-Ticket credit note (102) in USD for 33.33 at TpoCambio %s", notes, refund, stack.DemoUSDRate)
	}
}
