package stripe

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/sandbox/stripesim"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

const apiKey = "sk_test_sandbox"

func sandbox(t *testing.T) (*Client, string) {
	t.Helper()
	srv := httptest.NewServer(stripesim.New(stripesim.Config{APIKey: apiKey}))
	t.Cleanup(srv.Close)
	return New(Config{APIKey: apiKey, BaseURL: srv.URL}, srv.Client()), srv.URL
}

func post(t *testing.T, url string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %v", url, resp.StatusCode, err)
	}
	return out
}

// Against the sandbox, through stripe-go: statuses are normalized, amounts
// stay in the smallest unit (JPY has no decimals, UYU two), the order comes
// from the metadata, a disputed charge is a chargeback, a refund names its
// PaymentIntent, and an unknown object is NotFound.
func TestFetchesFromTheSandbox(t *testing.T) {
	c, base := sandbox(t)
	ctx := context.Background()
	jpy := post(t, base+"/sandbox/payment_intents", map[string]any{"amount": 500, "currency": "JPY", "order_id": "o-jpy"})["id"].(string)
	p, err := c.Payment(ctx, jpy)
	if err != nil || p.Status != psp.StatusPaid || p.AmountMinor != 500 || p.Currency != "JPY" || p.OrderID != "o-jpy" || p.Created.IsZero() || p.Conversion != nil {
		t.Fatalf("JPY payment = %+v (%v)", p, err)
	}
	pending := post(t, base+"/sandbox/payment_intents", map[string]any{"amount": 1250, "currency": "uyu", "order_id": "o-uyu", "status": "processing"})["id"].(string)
	if p, err := c.Payment(ctx, pending); err != nil || p.Status != psp.StatusPending || p.AmountMinor != 1250 || p.Currency != "UYU" {
		t.Fatalf("processing payment = %+v (%v)", p, err)
	}
	// Adaptive Pricing: a UYU PaymentIntent the customer paid USD 100.00 for.
	presented := post(t, base+"/sandbox/payment_intents", map[string]any{"amount": 401230, "currency": "uyu", "order_id": "o-fx",
		"presentment_amount": 10000, "presentment_currency": "usd"})["id"].(string)
	if p, err := c.Payment(ctx, presented); err != nil || p.AmountMinor != 10000 || p.Currency != "USD" ||
		p.Conversion == nil || *p.Conversion != (psp.Conversion{AmountMinor: 401230, Currency: "UYU"}) {
		t.Fatalf("presented payment = %+v %+v (%v), want charged USD 100.00 converted from UYU 4,012.30", p, p.Conversion, err)
	}
	ref := post(t, base+"/sandbox/payment_intents/"+jpy+"/refund", map[string]any{"amount": 200})["id"].(string)
	if r, err := c.Refund(ctx, ref); err != nil || r.Status != psp.StatusSuccess || r.AmountMinor != 200 || r.PaymentID != jpy || r.Currency != "JPY" {
		t.Fatalf("refund = %+v (%v)", r, err)
	}
	if refunds, err := c.RefundsCreated(ctx, time.Now().Add(-time.Minute), time.Now().Add(time.Minute)); err != nil || len(refunds) != 1 || refunds[0].ID != ref {
		t.Fatalf("RefundsCreated = %+v (%v), want %s", refunds, err, ref)
	}
	// Refunds of the USD-charged payment are in dollars, and the two that
	// refund it all add up to what was charged: a third, then the rest.
	var dollars int64
	for _, part := range []int64{133743, 267487} {
		id := post(t, base+"/sandbox/payment_intents/"+presented+"/refund", map[string]any{"amount": part})["id"].(string)
		r, err := c.Refund(ctx, id)
		if err != nil || r.Currency != "USD" || r.PaymentID != presented {
			t.Fatalf("refund of the presented payment = %+v (%v), want it in USD", r, err)
		}
		dollars += r.AmountMinor
		if part == 133743 && r.AmountMinor != 3333 {
			t.Fatalf("a third of UYU 4,012.30 refunded USD %d cents, want 3333", r.AmountMinor)
		}
	}
	if dollars != 10000 {
		t.Fatalf("refunding all of it gave back USD %d cents, want the 10000 charged", dollars)
	}
	post(t, base+"/sandbox/payment_intents/"+jpy+"/dispute", nil)
	if p, err := c.Payment(ctx, jpy); err != nil || p.Status != psp.StatusChargeback {
		t.Fatalf("disputed payment = %+v (%v), want CHARGEBACK", p, err)
	}
	if _, err := c.Payment(ctx, "pi_none"); !errkind.Is(err, errkind.NotFound) {
		t.Fatalf("unknown payment: %v, want NotFound", err)
	}
	if _, err := New(Config{APIKey: "sk_wrong", BaseURL: base}, http.DefaultClient).Payment(ctx, jpy); err == nil || errkind.Is(err, errkind.NotFound) {
		t.Fatalf("wrong key: %v, want a refusal", err)
	}
}

// An order's PaymentIntents are found by its metadata across search pages,
// an order id with a quote included; a period's are listed across pages.
func TestSearchesAndListsAtTheSandbox(t *testing.T) {
	c, base := sandbox(t)
	ctx := context.Background()
	const order = `o-'quoted'`
	var want []string
	for range 12 { // more than a page of 10
		want = append(want, post(t, base+"/sandbox/payment_intents", map[string]any{"amount": 100, "currency": "UYU", "order_id": order})["id"].(string))
	}
	post(t, base+"/sandbox/payment_intents", map[string]any{"amount": 100, "currency": "UYU", "order_id": "o-other"})
	found, err := c.PaymentsOfOrder(ctx, order)
	if err != nil || len(found) != len(want) || found[0].ID != want[0] || found[11].ID != want[11] || found[0].OrderID != order {
		t.Fatalf("PaymentsOfOrder = %d payments (%v), want %d", len(found), err, len(want))
	}
	all, err := c.PaymentsCreated(ctx, time.Now().Add(-time.Minute), time.Now().Add(time.Minute))
	if err != nil || len(all) != 13 {
		t.Fatalf("PaymentsCreated = %d (%v), want 13", len(all), err)
	}
	if later, err := c.PaymentsCreated(ctx, time.Now().Add(time.Minute), time.Now().Add(time.Hour)); err != nil || len(later) != 0 {
		t.Fatalf("PaymentsCreated of a later period = %d (%v), want none", len(later), err)
	}
}

// A base URL with a path (one sandbox serving several PSPs under prefixes)
// keeps it: stripe-go's /v1/... calls go under the prefix.
func TestBaseURLPathIsAPrefix(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/stripe/", http.StripPrefix("/stripe", stripesim.New(stripesim.Config{APIKey: apiKey})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := New(Config{APIKey: apiKey, BaseURL: srv.URL + "/stripe/"}, srv.Client())
	pi := post(t, srv.URL+"/stripe/sandbox/payment_intents", map[string]any{"amount": 1000, "currency": "UYU", "order_id": "o-prefix"})
	p, err := c.Payment(context.Background(), pi["id"].(string))
	if err != nil || p.OrderID != "o-prefix" || p.AmountMinor != 1000 {
		t.Fatalf("payment through the prefix = %+v (%v)", p, err)
	}
	if _, err := c.Payment(context.Background(), "pi_missing"); !errkind.Is(err, errkind.NotFound) {
		t.Fatalf("unknown payment through the prefix: %v, want NotFound", err)
	}
}
