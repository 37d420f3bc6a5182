package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/sandbox/pspsim"
)

const login, transKey, secret, apiToken, adminToken = "m-login", "m-trans", "m-secret", "m-api-token", "m-admin-token"

// logs is the service's stdout, read while it runs.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// addr waits for the "serving" line and returns the address it names.
// addr is the address of the log's first line with message msg ("serving"
// names the public port, "serving admin" the admin one).
func (l *logs) addr(t *testing.T, done <-chan error, msg string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("ingest stopped before serving: %v\n%s", err, l)
		default:
		}
		for _, line := range strings.Split(l.String(), "\n") {
			var entry struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == msg {
				return entry.Addr
			}
		}
	}
	t.Fatalf("ingest logged no %q line:\n%s", msg, l)
	return ""
}

// TestRunServesAPaymentFromTheOutside runs the real entry point (migrate,
// then serve on port 0) with its settings from a map, one of them under its
// old name, and drives it over HTTP: a customer and order through the API, a
// payment notified by the PSP sandbox that ends as one outbox event, the
// guarded admin and profiling routes; then it stops it.
func TestRunServesAPaymentFromTheOutside(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	pspServer := pspsim.New(pspsim.Config{Login: login, TransKey: transKey, SecretKey: secret, RetryDelay: 50 * time.Millisecond})
	sandbox := httptest.NewServer(pspServer)
	t.Cleanup(func() {
		sandbox.Close()
		pspServer.Close()
	})
	vars := map[string]string{"DATABASE_URL": dsn, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "DLOCAL_BASE_URL": sandbox.URL,
		"DLOCAL_LOGIN": login, "DLOCAL_TRANS_KEY": transKey, "DLOCAL_SECRET_KEY": secret, "API_TOKEN": apiToken,
		"ADMIN_TOKEN": adminToken, "INGEST_APPLY_POLL_INTERVAL": "100ms",
		"INGEST_NOTIFICATIONS_KEYS": "relay-test:relay-test-notifications-secret"}
	getenv := func(k string) string { return vars[k] }
	if err := run(t.Context(), getenv, []string{"migrate"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out logs
	done := make(chan error, 1)
	go func() { done <- run(ctx, getenv, nil, &out) }()
	base := "http://" + out.addr(t, done, "serving")

	c := client{t: t, base: base}
	c.expect(http.MethodGet, "/healthz", "", nil, http.StatusOK)
	c.expect(http.MethodGet, "/readyz", "", nil, http.StatusOK)
	if doc := c.expect(http.MethodGet, "/v1/openapi.yaml", "", nil, http.StatusOK); !strings.Contains(doc, "/v1/orders") || strings.Contains(doc, "/admin/") {
		t.Errorf("public /v1/openapi.yaml should describe /v1 and nothing of /admin:\n%.300s", doc)
	}
	for _, path := range []string{"/admin/status", "/metrics", "/debug/pprof/"} {
		c.expect(http.MethodGet, path, adminToken, nil, http.StatusNotFound) // the public port has no operator routes
	}
	admin := client{t: t, base: "http://" + out.addr(t, done, "serving admin")}
	admin.expect(http.MethodGet, "/admin/status", "", nil, http.StatusUnauthorized)
	admin.expect(http.MethodGet, "/admin/status", adminToken, nil, http.StatusOK)
	admin.expect(http.MethodGet, "/debug/pprof/", "", nil, http.StatusUnauthorized)
	admin.expect(http.MethodGet, "/debug/pprof/", adminToken, nil, http.StatusOK)
	admin.expect(http.MethodGet, "/metrics", "", nil, http.StatusOK)
	admin.expect(http.MethodGet, "/readyz", "", nil, http.StatusOK)
	if doc := admin.expect(http.MethodGet, "/admin/openapi.yaml", adminToken, nil, http.StatusOK); !strings.Contains(doc, "openapi: 3.1.0") || !strings.Contains(doc, "/admin/cases/{id}/resolve") {
		t.Errorf("/admin/openapi.yaml is not ingest's whole document:\n%.300s", doc)
	}
	body := c.expect(http.MethodPost, "/v1/customers", apiToken, map[string]any{"doc_type": "CI", "doc_country": "UY",
		"doc_number": "19119365", "legal_name": "Main Testbuyer"}, http.StatusCreated)
	var customer struct{ ID string }
	_ = json.Unmarshal([]byte(body), &customer)
	c.expect(http.MethodPost, "/v1/orders", apiToken, map[string]any{"merchant_order_id": "o-main", "customer_id": customer.ID,
		"amount_minor": 5000, "currency": "UYU"}, http.StatusCreated)
	payment := pay(t, sandbox.URL, base+"/webhooks/dlocal")
	waitForEvent(t, dsn, "payment:"+payment+":paid")

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	got := out.String()
	for _, want := range []string{`"logger":"ingest"`, `"msg":"config"`, `"old":"API_TOKEN"`, `"new":"INGEST_API_TOKEN"`} {
		if !strings.Contains(got, want) {
			t.Errorf("stdout lacks %s", want)
		}
	}
	for _, leak := range []string{apiToken, adminToken, secret, "19119365", "Main Testbuyer"} {
		if strings.Contains(got, leak) {
			t.Errorf("stdout shows %q", leak)
		}
	}
}

type client struct {
	t    *testing.T
	base string
}

// expect sends body as JSON with the bearer token (if any) and checks the
// status; it returns the answer.
func (c client) expect(method, path, token string, body any, want int) string {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, r)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, got, want)
	}
	return string(got)
}

// pay creates a paid payment of order o-main at the PSP sandbox, which
// notifies notify, and returns its id.
func pay(t *testing.T, pspURL, notify string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"amount": json.Number("50.00"), "currency": "UYU", "country": "UY",
		"payment_method_id": "CARD", "order_id": "o-main", "notification_url": notify})
	req, _ := http.NewRequest(http.MethodPost, pspURL+"/payments", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dlocal.HeaderLogin, login)
	req.Header.Set(dlocal.HeaderTransKey, transKey)
	date := dlocal.FormatDate(time.Now())
	req.Header.Set(dlocal.HeaderDate, date)
	req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(secret, login, date, b)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK || p.ID == "" {
		t.Fatalf("create payment: %d %v", resp.StatusCode, err)
	}
	return p.ID
}

// waitForEvent waits until ingest's outbox holds the event key.
func waitForEvent(t *testing.T, dsn, key string) {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var n int
		if err := pool.QueryRow(t.Context(), "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
	}
	t.Fatalf("no outbox event %s", key)
}
