package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/onceflow/onceflow/sandbox/stripesim"
)

const (
	stripeAPIKey     = "sk_test_onceflow"
	stripePSPSecret  = "whsec_stripe_psp_secret_0123456789"
	stripeRetiredKey = "whsec_stripe_retired_secret_01234"
)

// stripeEnv is ingest with a dLocal and a Stripe PSP source, and the
// Stripe sandbox notifying /webhooks/stripe.
type stripeEnv struct {
	*env
	sim *stripesim.Server
	url string
}

func startStripe(t *testing.T, extra ...string) *stripeEnv {
	t.Helper()
	return startStripeWith(t, `
sources:
  - {name: dlocal, kind: psp, psp: dlocal, login: env:DLOCAL_LOGIN, secrets: [env:DLOCAL_SECRET_KEY]}
  - {name: stripe, kind: psp, psp: stripe, secrets: [`+stripeRetiredKey+`, `+stripePSPSecret+`]}
`, extra...)
}

// startStripeWith is startStripe with the sources file given.
func startStripeWith(t *testing.T, file string, extra ...string) *stripeEnv {
	t.Helper()
	sim := stripesim.New(stripesim.Config{APIKey: stripeAPIKey, WebhookSecret: stripePSPSecret})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "sources.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	e := start(t, append([]string{"INGEST_WEBHOOK_SOURCES_FILE", path, "STRIPE_API_KEY", stripeAPIKey, "STRIPE_BASE_URL", srv.URL}, extra...)...)
	sim.NotifyTo(e.ingest + "/webhooks/stripe")
	return &stripeEnv{env: e, sim: sim, url: srv.URL}
}

// sandbox posts to the Stripe sandbox and returns the object's id.
func (s *stripeEnv) sandbox(path string, body any) string {
	s.t.Helper()
	code, got := s.post(s.url+path, body, nil)
	var out struct{ ID string }
	if err := json.Unmarshal([]byte(got), &out); code != http.StatusOK || err != nil {
		s.t.Fatalf("stripe sandbox %s: %d %s", path, code, got)
	}
	return out.ID
}

// Issue 17, Stripe against real PostgreSQL and its sandbox: a paid
// PaymentIntent is one invoice event, a refund one credit-note event, a
// stale earlier status changes nothing (forward only), and a dispute opens
// a chargeback case.
func TestStripePaidRefundOutOfOrderChargeback(t *testing.T) {
	t.Parallel()
	s := startStripe(t)
	s.order("o-st", 9900)
	pi := s.sandbox("/sandbox/payment_intents", map[string]any{"amount": 9900, "currency": "UYU", "order_id": "o-st"})
	s.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pi+":paid")

	s.sandbox("/sandbox/payment_intents/"+pi+"/status", map[string]any{"status": "processing"})
	s.waitCount(2, "SELECT count(*) FROM ingest.webhook_receipts WHERE source = 'stripe' AND status <> 'pending'")
	if n := s.count("SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", pi); n != 1 {
		t.Fatal("a stale processing event moved the payment back from PAID")
	}
	s.sandbox("/sandbox/payment_intents/"+pi+"/status", map[string]any{"status": "succeeded", "silent": true})

	ref := s.sandbox("/sandbox/payment_intents/"+pi+"/refund", map[string]any{"amount": 4000})
	s.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "refund:"+ref+":succeeded")

	s.sandbox("/sandbox/payment_intents/"+pi+"/dispute", nil)
	c := s.openCase("payment:" + pi)
	if c.Kind != "chargeback" || c.Evidence["invoiced"] != true || c.AmountMinor != 9900 {
		t.Fatalf("case %+v, want a chargeback of 9900 on an invoiced payment", c)
	}
	if n := s.count("SELECT count(*) FROM ingest.outbox"); n != 2 {
		t.Fatalf("outbox rows = %d, want 2 (one invoice, one credit note)", n)
	}
}

// A merchant who takes Stripe alone sets no DLOCAL_* setting: ingest starts
// and a paid PaymentIntent is one invoice event.
func TestStripeAloneNeedsNoDLocalSettings(t *testing.T) {
	t.Parallel()
	s := startStripeWith(t, `
sources:
  - {name: stripe, kind: psp, psp: stripe, secrets: [`+stripePSPSecret+`]}
`, "DLOCAL_LOGIN", "", "DLOCAL_TRANS_KEY", "", "DLOCAL_SECRET_KEY", "")
	s.order("o-st-alone", 2500)
	pi := s.sandbox("/sandbox/payment_intents", map[string]any{"amount": 2500, "currency": "UYU", "order_id": "o-st-alone"})
	s.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pi+":paid")
}

// A Stripe PaymentIntent whose event never came is found by the poller's
// metadata search: one invoice event; and one without our metadata is
// matched by the PSP payment id its order was recorded with.
func TestStripeLostEventThePollerInvoicesOnce(t *testing.T) {
	t.Parallel()
	s := startStripe(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	s.order("o-st-lost", 1500)
	lost := s.sandbox("/sandbox/payment_intents", map[string]any{"amount": 1500, "currency": "UYU", "order_id": "o-st-lost", "silent": true})
	s.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+lost+":paid")

	bare := s.sandbox("/sandbox/payment_intents", map[string]any{"amount": 700, "currency": "UYU", "silent": true})
	s.order("o-st-linked", 700, bare)
	s.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+bare+":paid")
	if n := s.count("SELECT count(*) FROM ingest.outbox"); n != 2 {
		t.Fatalf("outbox rows = %d, want 2", n)
	}
}

// Live-signed Stripe deliveries (stripe-go's test signer) to the PSP
// source: valid ones under either secret of a rotation are taken, and a
// tampered, stale or wrongly keyed one is refused with 401 and stores
// nothing; a redelivered event is a duplicate.
func TestStripeSignedDeliveries(t *testing.T) {
	t.Parallel()
	s := startStripe(t)
	body := []byte(`{"id":"evt_live_1","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_unknown","object":"payment_intent"}}}`)
	sign := func(b []byte, secret string, at time.Time) http.Header {
		p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: b, Secret: secret, Timestamp: at})
		return http.Header{"Stripe-Signature": {p.Header}}
	}
	now := time.Now()
	for _, tc := range []struct {
		name   string
		body   []byte
		header http.Header
		want   int
		out    string
	}{
		{"valid", body, sign(body, stripePSPSecret, now), http.StatusOK, "accepted"},
		{"redelivered, retired secret", body, sign(body, stripeRetiredKey, now), http.StatusOK, "duplicate"},
		{"tampered", []byte(strings.Replace(string(body), "evt_live_1", "evt_live_2", 1)), sign(body, stripePSPSecret, now), http.StatusUnauthorized, "invalid_signature"},
		{"stale", body, sign(body, stripePSPSecret, now.Add(-time.Hour)), http.StatusUnauthorized, "invalid_signature"},
		{"wrong secret", body, sign(body, "whsec_somebody_else_0123456789", now), http.StatusUnauthorized, "invalid_signature"},
	} {
		code, got := s.deliver("stripe", tc.body, tc.header)
		if code != tc.want || !strings.Contains(got, tc.out) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, got, tc.want, tc.out)
		}
	}
	if n := s.count("SELECT count(*) FROM ingest.webhook_receipts WHERE source = 'stripe'"); n != 1 {
		t.Fatalf("receipts = %d, want 1", n)
	}
	if n := s.count("SELECT count(*) FROM ingest.webhook_receipts WHERE dedupe_key = 'event:evt_live_1' AND event_id = 'pi_unknown' AND event_type = 'payment'"); n != 1 {
		t.Fatal("the event's receipt does not name its PaymentIntent")
	}
}
