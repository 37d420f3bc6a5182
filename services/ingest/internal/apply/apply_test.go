package apply_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/sandbox/pspsim"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	pspdlocal "github.com/onceflow/onceflow/services/ingest/internal/psp/dlocal"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

const login, transKey, secret = "t-login", "t-trans", "t-secret"

// env is an apply worker over a fresh ingest database and a PSP sandbox
// that sends no notifications: the test records each receipt itself and
// runs the worker's rounds one at a time.
type env struct {
	t      *testing.T
	pool   *pgxpool.Pool
	store  *store.Store
	worker *apply.Worker
	psp    string
	client apply.PSP
	sent   int                  // receipts recorded, to give each its own dedupe key
	reg    *prometheus.Registry // worker's metrics
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	if err := db.Migrate(t.Context(), dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	pspServer := pspsim.New(pspsim.Config{Login: login, TransKey: transKey, SecretKey: secret})
	srv := httptest.NewServer(pspServer)
	t.Cleanup(func() { srv.Close(); pspServer.Close() })
	st := store.New(pool)
	client := pspdlocal.New(pspdlocal.Config{BaseURL: srv.URL, Login: login, TransKey: transKey, SecretKey: secret}, httpclient.New(5*time.Second))
	e := &env{t: t, pool: pool, store: st, psp: srv.URL, client: client, reg: prometheus.NewRegistry()}
	e.worker = e.workerIn(10, e.reg)
	return e
}

// newWorker returns another apply worker over e's database and sandbox
// that claims up to batch receipts a round, like another ingest replica.
func (e *env) newWorker(batch int) *apply.Worker { return e.workerIn(batch, prometheus.NewRegistry()) }

// workerIn is newWorker registering its metrics with reg.
func (e *env) workerIn(batch int, reg *prometheus.Registry) *apply.Worker {
	return apply.NewWorker(e.store, apply.PSPs{"dlocal": e.client}, zaptest.NewLogger(e.t), reg, apply.Config{
		Batch: batch, Lease: time.Minute, Poll: time.Second, MaxAttempts: 5,
		Backoff: backoff.Policy{Base: time.Millisecond, Cap: time.Millisecond},
	}, nil)
}

// order records a customer and an order of amount minor units in UYU.
func (e *env) order(merchantID string, amount int64) {
	e.t.Helper()
	c, err := e.store.InsertCustomer(e.t.Context(), store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "X1", LegalName: "Test Buyer"})
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.store.InsertOrder(e.t.Context(), store.Order{MerchantOrderID: merchantID, CustomerID: c.ID, AmountMinor: amount, Currency: "UYU", Lines: []byte("[]")})
	if err != nil {
		e.t.Fatal(err)
	}
}

// call sends a signed dLocal API request to the sandbox and returns the id
// of the object it answers.
func (e *env) call(path string, body map[string]any) string {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.psp+path, bytes.NewReader(b))
	date := dlocal.FormatDate(time.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dlocal.HeaderLogin, login)
	req.Header.Set(dlocal.HeaderTransKey, transKey)
	req.Header.Set(dlocal.HeaderDate, date)
	req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(secret, login, date, b)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("POST %s: %d %v", path, resp.StatusCode, err)
	}
	return out.ID
}

// force sets payment id's status at the sandbox.
func (e *env) force(id, status string) {
	e.t.Helper()
	b, _ := json.Marshal(map[string]string{"status": status})
	resp, err := http.Post(e.psp+"/sandbox/payments/"+id+"/status", "application/json", bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("force %s %s: %d", id, status, resp.StatusCode)
	}
}

// apply records a receipt of a notification of eventType id in status,
// runs one round of the worker and returns the receipt's status.
func (e *env) apply(eventType, id, status string) string {
	e.t.Helper()
	e.sent++
	key := fmt.Sprintf("%s:%s:%s:%d", eventType, id, status, e.sent)
	_, err := e.store.InsertReceipt(e.t.Context(), store.NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: string(webhook.KindPSP),
		DedupeKey: key, EventID: id, EventType: eventType, Body: []byte(`{}`)})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.worker.Round(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	return e.scalar("SELECT status FROM ingest.webhook_receipts WHERE dedupe_key = $1", key)
}

func (e *env) scalar(query string, args ...any) string {
	e.t.Helper()
	var v string
	if err := e.pool.QueryRow(context.Background(), query, args...).Scan(&v); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return v
}

// A PAID the PSP reports after EXPIRED means the money was taken: the
// payment ends PAID with exactly one invoice event, and its refund is then
// applied with its credit-note event instead of waiting forever.
func TestLatePaidAfterExpiredIsPaidAndRefundable(t *testing.T) {
	e := newEnv(t)
	e.order("o-late", 5000)
	id := e.call("/payments", map[string]any{"amount": 50, "currency": "UYU", "country": "UY", "payment_method_id": "CARD",
		"order_id": "o-late", "description": "100"})
	e.force(id, "EXPIRED")
	if got := e.apply("payment", id, "EXPIRED"); got != "done" {
		t.Fatalf("EXPIRED receipt %s, want done", got)
	}
	if got := e.scalar("SELECT status FROM ingest.payments WHERE id = $1", id); got != "EXPIRED" {
		t.Fatalf("payment %s after EXPIRED, want EXPIRED", got)
	}

	e.force(id, "PAID")
	if got := e.apply("payment", id, "PAID"); got != "done" {
		t.Fatalf("PAID receipt %s, want done", got)
	}
	if got := e.scalar("SELECT status FROM ingest.payments WHERE id = $1", id); got != "PAID" {
		t.Fatalf("payment %s after a late PAID, want PAID", got)
	}
	if got := e.scalar("SELECT count(*)::text FROM ingest.outbox WHERE event_key LIKE $1", "payment:"+id+":%"); got != "1" {
		t.Fatalf("invoice events = %s, want 1", got)
	}
	if got := e.scalar("SELECT (paid_at IS NOT NULL)::text FROM ingest.payments WHERE id = $1", id); got != "true" {
		t.Fatal("a payment moved to PAID has no paid_at, so the reconciler would never see it")
	}

	// A late EXPIRED again changes nothing and emits nothing.
	e.force(id, "EXPIRED")
	if got := e.apply("payment", id, "EXPIRED"); got != "done" {
		t.Fatalf("second EXPIRED receipt %s, want done", got)
	}
	if got := e.scalar("SELECT status FROM ingest.payments WHERE id = $1", id); got != "PAID" {
		t.Fatalf("payment %s after a late EXPIRED, want PAID", got)
	}
	e.force(id, "PAID")

	refund := e.call("/refunds", map[string]any{"payment_id": id})
	if got := e.apply("refund", refund, "SUCCESS"); got != "done" {
		t.Fatalf("refund receipt %s, want done: %s", got,
			e.scalar("SELECT coalesce(last_error, '') FROM ingest.webhook_receipts WHERE event_id = $1", refund))
	}
	if got := e.scalar("SELECT status FROM ingest.refunds WHERE id = $1", refund); got != "SUCCESS" {
		t.Fatalf("refund %s, want SUCCESS", got)
	}
	if got := e.scalar("SELECT count(*)::text FROM ingest.outbox"); got != "2" {
		t.Fatalf("outbox rows = %s, want 2 (one invoice, one credit note)", got)
	}
}
