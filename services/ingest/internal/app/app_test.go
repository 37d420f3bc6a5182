package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/api/openapi/openapitest"
	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/pkg/logging"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/sandbox/pspsim"
	"github.com/onceflow/onceflow/services/ingest/internal/app"
)

const (
	login, transKey, secret, token, adminToken = "t-login", "t-trans", "t-secret", "t-token", "t-admin"
	// relayKey is the relay's key the tests sign notifications with and
	// ingest trusts (INGEST_NOTIFICATIONS_KEYS).
	relayKey = "relay-test:relay-test-notifications-secret"
)

type env struct {
	t      testing.TB
	client *http.Client
	ingest string // the public port's base URL
	admin  string // the admin port's base URL
	psp    string
	pool   *pgxpool.Pool
}

// start runs ingest (app.New, then Run) on port 0 against a fresh database
// and a PSP sandbox. extra holds more variables as name, value pairs.
func start(t testing.TB, extra ...string) *env { return startSlow(t, 0, extra...) }

// startSlow is start with a PSP sandbox that answers every request delay
// late.
func startSlow(t testing.TB, delay time.Duration, extra ...string) *env {
	dsn := pgtest.NewDatabase(t)
	if err := db.Migrate(context.Background(), dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	pspServer := pspsim.New(pspsim.Config{Login: login, TransKey: transKey, SecretKey: secret, RetryDelay: 50 * time.Millisecond})
	sandbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		pspServer.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		sandbox.Close()
		pspServer.Close()
	})
	vars := map[string]string{"DATABASE_URL": dsn, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "DLOCAL_BASE_URL": sandbox.URL,
		"DLOCAL_LOGIN": login, "DLOCAL_TRANS_KEY": transKey, "DLOCAL_SECRET_KEY": secret, "INGEST_API_TOKEN": token,
		"ADMIN_TOKEN": adminToken, "INGEST_APPLY_POLL_INTERVAL": "100ms", "INGEST_APPLY_BACKOFF_BASE": "100ms",
		"INGEST_APPLY_BACKOFF_CAP": "500ms", "INGEST_POLL_INTERVAL": "100ms", "LOG_LEVEL": "debug",
		"INGEST_POLL_EVERY": "200ms", "INGEST_POLL_EVERY_MAX": "1s", // polled soon again, once a test sets INGEST_POLL_AFTER
		"INGEST_CONSUME_NOTIFICATIONS": "false", // a test that consumes notifications turns it on with a queue of its own
		"INGEST_NOTIFICATIONS_KEYS":    relayKey}
	for i := 0; i < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	a, log := build(t, vars)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		_ = log.Sync()
	})
	scheme := "http://"
	if vars["TLS_CERT_FILE"] != "" {
		scheme = "https://"
	}
	openapitest.Routes(t, "ingest", a.Routes())
	// Every exchange of these tests is held to ingest's OpenAPI document.
	return &env{t: t, client: openapitest.Client(t, "ingest", nil, a.Addr(), a.AdminAddr()), ingest: scheme + a.Addr(), admin: scheme + a.AdminAddr(), psp: sandbox.URL, pool: pool}
}

// build reads the config from vars alone and builds ingest with a logger on
// stderr, which TestMain checks for personal data; it logs the config as
// service.Main does.
func build(t testing.TB, vars map[string]string) (*app.App, *zap.Logger) {
	t.Helper()
	loaded, err := config.LoadFrom[app.Config](func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	log, err := logging.NewTo(os.Stderr, "ingest", loaded.Value.LogLevel)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("config", loaded.Fields()...)
	a, err := app.New(context.Background(), loaded.Value, log)
	if err != nil {
		t.Fatalf("ingest did not start: %v", err)
	}
	return a, log
}

func (e *env) post(url string, body any, header http.Header) (int, string) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	if header.Get(dlocal.HeaderLogin) != "" {
		date := dlocal.FormatDate(time.Now())
		req.Header.Set(dlocal.HeaderDate, date)
		req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(secret, login, date, b)))
	}
	return e.do(req)
}

// get sends a GET with the headers.
func (e *env) get(url string, header http.Header) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	return e.do(req)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// do sends req with the client that trusts the test certificate.
func (e *env) do(req *http.Request) (int, string) {
	e.t.Helper()
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.String()
}

// customer is a buyer profile as the API takes it.
type customer map[string]string

// Personal data the tests send. TestMain fails the suite if any of it
// reaches a log line.
var (
	ana  = customer{"doc_type": "CI", "doc_country": "UY", "doc_number": "19119365", "legal_name": "Ana Testlastname", "email": "ana.secret@example.com"}
	acme = customer{"doc_type": "RUT", "doc_country": "UY", "doc_number": "210000000019", "legal_name": "Acme Fiscalname SA",
		"address": "Calle Privada 1234", "city": "Montevideo", "email": "billing.acme@example.com"}
)

// order creates a customer and an order of amount minor units, with an
// optional PSP payment id.
func (e *env) order(id string, amount int64, pspPaymentID ...string) {
	e.t.Helper()
	auth := http.Header{"Authorization": {"Bearer " + token}}
	code, body := e.post(e.ingest+"/v1/customers", ana, auth)
	if code != http.StatusCreated {
		e.t.Fatalf("create customer: %d %s", code, body)
	}
	var c struct{ ID string }
	_ = json.Unmarshal([]byte(body), &c)
	o := map[string]any{"merchant_order_id": id, "customer_id": c.ID, "amount_minor": amount, "currency": "UYU"}
	if len(pspPaymentID) > 0 {
		o["psp_payment_id"] = pspPaymentID[0]
	}
	code, body = e.post(e.ingest+"/v1/orders", o, auth)
	if code != http.StatusCreated {
		e.t.Fatalf("create order: %d %s", code, body)
	}
}

// pay creates a payment of amount at the PSP sandbox, notifying ingest
// unless silent.
func (e *env) pay(orderID, amount string, silent ...bool) string {
	e.t.Helper()
	req := map[string]any{"amount": json.Number(amount), "currency": "UYU", "country": "UY", "payment_method_id": "CARD", "order_id": orderID}
	if len(silent) == 0 || !silent[0] {
		req["notification_url"] = e.ingest + "/webhooks/dlocal"
	}
	code, body := e.post(e.psp+"/payments", req, http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	if code != http.StatusOK {
		e.t.Fatalf("create payment: %d %s", code, body)
	}
	var p struct{ ID string }
	_ = json.Unmarshal([]byte(body), &p)
	return p.ID
}

func (e *env) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) waitCount(want int, query string, args ...any) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := e.count(query, args...)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s = %d, want %d", query, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPaidPaymentYieldsOneInvoiceEvent(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-1", 122050)
	id := e.pay("o-1", "1220.50")
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+id+":paid")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", id)

	// 50 concurrent deliveries of the same notification: one receipt, one event.
	body := []byte(fmt.Sprintf(`{"id":%q,"status":"PAID","amount":1220.50,"currency":"UYU","order_id":"o-1"}`, id))
	var wg sync.WaitGroup
	codes := make(chan int, 50)
	for range 50 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, e.ingest+"/webhooks/dlocal", bytes.NewReader(body))
			date := dlocal.FormatDate(time.Now())
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(dlocal.HeaderDate, date)
			req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(secret, login, date, body)))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				codes <- resp.StatusCode
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Fatalf("a duplicate delivery answered %d, want 200", c)
		}
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts WHERE dedupe_key = $1", "payment:"+id+":PAID"); n != 1 {
		t.Fatalf("receipts for one event = %d, want 1", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}
}

func TestLatePendingNeverUndoesPaid(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-2", 5000)
	id := e.pay("o-2", "50.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", id)
	code, body := e.post(e.psp+"/sandbox/payments/"+id+"/status", map[string]string{"status": "PENDING"}, nil)
	if code != http.StatusOK {
		t.Fatalf("force PENDING: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.webhook_receipts WHERE dedupe_key = $1 AND status = 'done'", "payment:"+id+":PENDING")
	if n := e.count("SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", id); n != 1 {
		t.Fatal("a late PENDING undid PAID")
	}
}

func TestAmountMismatchIsRejected(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-3", 1000)
	id := e.pay("o-3", "20.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1 AND status = 'rejected'", id)
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 0 {
		t.Fatalf("outbox rows after a mismatch = %d, want 0", n)
	}
}
