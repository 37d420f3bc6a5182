package pspsim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/sandbox/pspsim"
)

const (
	testLogin    = "test-login"
	testTransKey = "test-trans-key"
	testSecret   = "test-secret"
)

// fixedNow is the simulator clock in tests.
func fixedNow() time.Time { return time.Date(2026, 11, 30, 15, 4, 5, 123e6, time.UTC) }

// env is a running simulator with its API base URL.
type env struct {
	srv *pspsim.Server
	url string
}

// start runs a simulator behind a real HTTP server; cfg's credentials,
// logger and retry delay are set, and its clock when empty.
func start(tb testing.TB, cfg pspsim.Config) env {
	tb.Helper()
	cfg.Login, cfg.TransKey, cfg.SecretKey = testLogin, testTransKey, testSecret
	if cfg.Now == nil {
		cfg.Now = fixedNow
	}
	cfg.Logger = zaptest.NewLogger(tb)
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = 10 * time.Millisecond
	}
	srv := pspsim.New(cfg)
	hs := httptest.NewServer(srv)
	tb.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return env{srv: srv, url: hs.URL}
}

// notification is one request received by a receiver.
type notification struct {
	header http.Header
	body   []byte
}

// receiver is an httptest notification endpoint. Each request is answered
// with the next status from statuses (200 once they run out) and recorded.
type receiver struct {
	url string
	got chan notification
}

func newReceiver(tb testing.TB, statuses ...int) receiver {
	tb.Helper()
	got := make(chan notification, 64)
	replies := make(chan int, len(statuses))
	for _, st := range statuses {
		replies <- st
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- notification{header: r.Header.Clone(), body: body}
		select {
		case st := <-replies:
			w.WriteHeader(st)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	tb.Cleanup(hs.Close)
	return receiver{url: hs.URL, got: got}
}

// next waits for the next notification.
func (rc receiver) next(tb testing.TB) notification {
	tb.Helper()
	select {
	case n := <-rc.got:
		return n
	case <-time.After(5 * time.Second):
		tb.Fatal("no notification received")
		return notification{}
	}
}

// none asserts that no further notification arrives for a short while.
func (rc receiver) none(tb testing.TB) {
	tb.Helper()
	select {
	case n := <-rc.got:
		tb.Fatalf("unexpected notification: %s", n.body)
	case <-time.After(100 * time.Millisecond):
	}
}

// signed builds an API request signed like a dLocal client.
func signed(tb testing.TB, method, url, body string) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		tb.Fatal(err)
	}
	date := dlocal.FormatDate(time.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dlocal.HeaderDate, date)
	req.Header.Set(dlocal.HeaderLogin, testLogin)
	req.Header.Set(dlocal.HeaderTransKey, testTransKey)
	req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(testSecret, testLogin, date, []byte(body))))
	return req
}

// do sends req and returns the status and raw body.
func do(tb testing.TB, req *http.Request) (int, []byte) {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, body
}

// call sends a signed request and decodes the JSON answer, keeping numbers
// as json.Number so amounts can be compared textually.
func call(tb testing.TB, method, url, body string) (int, map[string]any) {
	tb.Helper()
	status, raw := do(tb, signed(tb, method, url, body))
	return status, decode(tb, raw)
}

func decode(tb testing.TB, raw []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		tb.Fatalf("decode %q: %v", raw, err)
	}
	return m
}

// post sends an unauthenticated sandbox request.
func post(tb testing.TB, url, body string) (int, map[string]any) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		tb.Fatal(err)
	}
	status, raw := do(tb, req)
	return status, decode(tb, raw)
}

// createPayment creates a payment of 1220.00 UYU with description and
// notification URL and returns its id.
func createPayment(tb testing.TB, e env, description, notifyURL string) string {
	tb.Helper()
	status, p := call(tb, http.MethodPost, e.url+"/payments", paymentBody(description, notifyURL))
	if status != http.StatusOK {
		tb.Fatalf("create payment: %d %v", status, p)
	}
	return p["id"].(string)
}

func paymentBody(description, notifyURL string) string {
	b, _ := json.Marshal(map[string]any{
		"amount": json.Number("1220.00"), "currency": "UYU", "country": "UY",
		"payment_method_id": "CARD", "order_id": "order-1", "description": description,
		"notification_url": notifyURL,
		"payer":            map[string]string{"name": "Ana", "email": "ana@example.com", "document": "12345672"},
	})
	return string(b)
}

// wantFields fails unless m holds every key of want with an equal value.
func wantFields(tb testing.TB, m map[string]any, want map[string]any) {
	tb.Helper()
	for k, v := range want {
		if !reflect.DeepEqual(m[k], v) {
			tb.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
}
