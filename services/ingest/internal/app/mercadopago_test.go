package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/sandbox/mpsim"
)

const (
	mpToken  = "TEST-onceflow-token"
	mpSecret = "mp_webhook_secret_0123456789"
)

// mpEnv is ingest with a dLocal and a Mercado Pago PSP source, and the
// Mercado Pago sandbox notifying /webhooks/mercadopago.
type mpEnv struct {
	*env
	url string
}

func startMercadoPago(t *testing.T, extra ...string) *mpEnv {
	t.Helper()
	sim := mpsim.New(mpsim.Config{AccessToken: mpToken, WebhookSecret: mpSecret})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "sources.yaml")
	file := `
sources:
  - {name: dlocal, kind: psp, psp: dlocal, login: env:DLOCAL_LOGIN, secrets: [env:DLOCAL_SECRET_KEY]}
  - {name: mercadopago, kind: psp, psp: mercadopago, secrets: [` + mpSecret + `]}
`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	e := start(t, append([]string{"INGEST_WEBHOOK_SOURCES_FILE", path, "MERCADOPAGO_ACCESS_TOKEN", mpToken, "MERCADOPAGO_BASE_URL", srv.URL}, extra...)...)
	sim.NotifyTo(e.ingest + "/webhooks/mercadopago")
	return &mpEnv{env: e, url: srv.URL}
}

// sandbox posts to the Mercado Pago sandbox and returns the object's id.
func (m *mpEnv) sandbox(path string, body any) string {
	m.t.Helper()
	code, got := m.post(m.url+path, body, nil)
	var out struct{ ID int64 }
	if err := json.Unmarshal([]byte(got), &out); code != http.StatusOK || err != nil {
		m.t.Fatalf("mercado pago sandbox %s: %d %s", path, code, got)
	}
	return strconv.FormatInt(out.ID, 10)
}

// Issue 17, Mercado Pago against real PostgreSQL and its sandbox: an
// approved payment is one invoice event, a refund (notified as a change
// of its payment) one credit-note event, a stale earlier status changes
// nothing, and charged_back opens a chargeback case.
func TestMercadoPagoPaidRefundOutOfOrderChargeback(t *testing.T) {
	t.Parallel()
	m := startMercadoPago(t)
	m.order("o-mp", 8000)
	pay := m.sandbox("/sandbox/payments", map[string]any{"amount": "80.00", "currency": "UYU", "external_reference": "o-mp"})
	m.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pay+":paid")

	m.sandbox("/sandbox/payments/"+pay+"/status", map[string]any{"status": "in_process"})
	m.waitCount(2, "SELECT count(*) FROM ingest.webhook_receipts WHERE source = 'mercadopago' AND status <> 'pending'")
	if n := m.count("SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", pay); n != 1 {
		t.Fatal("a stale in_process notification moved the payment back from PAID")
	}
	m.sandbox("/sandbox/payments/"+pay+"/status", map[string]any{"status": "approved", "silent": true})

	ref := m.sandbox("/sandbox/payments/"+pay+"/refund", map[string]any{"amount_minor": 3000})
	m.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "refund:"+pay+"-"+ref+":succeeded")

	m.sandbox("/sandbox/payments/"+pay+"/status", map[string]any{"status": "charged_back"})
	c := m.openCase("payment:" + pay)
	if c.Kind != "chargeback" || c.Evidence["invoiced"] != true || c.AmountMinor != 8000 {
		t.Fatalf("case %+v, want a chargeback of 8000 on an invoiced payment", c)
	}
	if n := m.count("SELECT count(*) FROM ingest.outbox"); n != 2 {
		t.Fatalf("outbox rows = %d, want 2 (one invoice, one credit note)", n)
	}
}

// A Mercado Pago payment whose notification never came is found by the
// poller's search by external_reference: one invoice event.
func TestMercadoPagoLostNotificationThePollerInvoicesOnce(t *testing.T) {
	t.Parallel()
	m := startMercadoPago(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	m.order("o-mp-lost", 990)
	lost := m.sandbox("/sandbox/payments", map[string]any{"amount": "9.90", "currency": "UYU", "external_reference": "o-mp-lost", "silent": true})
	m.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+lost+":paid")
	if n := m.count("SELECT count(*) FROM ingest.outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}
}

// Live-signed deliveries to the Mercado Pago source: valid ones are taken
// (a retry of the same notification is a duplicate); a tampered data.id,
// another secret or no signature is refused with 401 and stores nothing.
func TestMercadoPagoSignedDeliveries(t *testing.T) {
	t.Parallel()
	m := startMercadoPago(t)
	deliver := func(dataID, signedID, secret string, signed bool) (int, string) {
		body := []byte(fmt.Sprintf(`{"id":4242,"type":"payment","action":"payment.updated","data":{"id":%q}}`, dataID))
		req, _ := http.NewRequest(http.MethodPost, m.ingest+"/webhooks/mercadopago?type=payment&data.id="+dataID, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", "req-42")
		if signed {
			ts := strconv.FormatInt(time.Now().Unix(), 10)
			req.Header.Set("X-Signature", "ts="+ts+",v1="+mpsim.Sign(secret, signedID, "req-42", ts))
		}
		return m.do(req)
	}
	for _, tc := range []struct {
		name                     string
		dataID, signedID, secret string
		signed                   bool
		want                     int
		out                      string
	}{
		{"valid", "5001", "5001", mpSecret, true, http.StatusOK, "accepted"},
		{"retried", "5001", "5001", mpSecret, true, http.StatusOK, "duplicate"},
		{"tampered data.id", "5002", "5001", mpSecret, true, http.StatusUnauthorized, "invalid_signature"},
		{"wrong secret", "5001", "5001", "somebody_else_0123456789", true, http.StatusUnauthorized, "invalid_signature"},
		{"unsigned", "5001", "5001", mpSecret, false, http.StatusUnauthorized, "invalid_signature"},
	} {
		if code, got := deliver(tc.dataID, tc.signedID, tc.secret, tc.signed); code != tc.want || !strings.Contains(got, tc.out) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, code, got, tc.want, tc.out)
		}
	}
	if n := m.count("SELECT count(*) FROM ingest.webhook_receipts WHERE source = 'mercadopago'"); n != 1 {
		t.Fatalf("receipts = %d, want 1", n)
	}
}
