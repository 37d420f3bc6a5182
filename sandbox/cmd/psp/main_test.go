package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/onceflow/onceflow/pkg/testwait"
)

// observed is a test logger that also keeps the entries for the test.
func observed(tb testing.TB) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.InfoLevel)
	return zap.New(zapcore.NewTee(zaptest.NewLogger(tb).Core(), core)), logs
}

// listeningAddr waits for the server's "listening" entry and returns the
// address it reports: the server binds port 0 itself, so no port number is
// handed out before it is bound.
func listeningAddr(tb testing.TB, logs *observer.ObservedLogs) string {
	tb.Helper()
	var addr string
	testwait.Until(tb, 5*time.Second, 20*time.Millisecond, "the listening address", func() bool {
		for _, e := range logs.FilterMessage("listening").All() {
			addr, _ = e.ContextMap()["addr"].(string)
		}
		return addr != ""
	})
	return addr
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PSP_ADDR": "127.0.0.1:0", "PSP_NOTIFY_URL": "http://127.0.0.1:1/hook"}
	getenv := func(k string) string { return env[k] }
	log, logs := observed(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, log, nil, getenv) }()
	served := map[string]string{"PSP_ADDR": listeningAddr(t, logs)}
	probeEnv := func(k string) string { return served[k] }

	deadline := time.Now().Add(5 * time.Second)
	for run(context.Background(), log, []string{"healthcheck"}, probeEnv) != nil {
		if time.Now().After(deadline) {
			t.Fatal("healthcheck never passed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		variable string
	}{
		{"address", map[string]string{"PSP_ADDR": "8091"}, nil, "PSP_ADDR"},
		{"notify url", map[string]string{"PSP_NOTIFY_URL": "/hook"}, nil, "PSP_NOTIFY_URL"},
		{"stripe notify url", map[string]string{"STRIPE_NOTIFY_URL": "ftp://x/hook"}, nil, "STRIPE_NOTIFY_URL"},
		{"mercado pago notify url", map[string]string{"MERCADOPAGO_NOTIFY_URL": "hook"}, nil, "MERCADOPAGO_NOTIFY_URL"},
		{"retry delay", map[string]string{"PSP_RETRY_DELAY": "5"}, nil, "PSP_RETRY_DELAY"},
		{"loss rate", map[string]string{"PSP_LOSS_RATE": "1.5"}, nil, "PSP_LOSS_RATE"},
		{"delay", map[string]string{"PSP_DELAY_MAX": "soon"}, nil, "PSP_DELAY_MAX"},
		{"copies", map[string]string{"PSP_MAX_COPIES": "1"}, nil, "PSP_MAX_COPIES"},
		{"seed", map[string]string{"PSP_SEED": "-1"}, nil, "PSP_SEED"},
		{"command", map[string]string{}, []string{"migrate"}, "migrate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := run(context.Background(), zaptest.NewLogger(t), tt.args, func(k string) string { return tt.env[k] })
			if err == nil || !strings.Contains(err.Error(), tt.variable) {
				t.Fatalf("run = %v, want an error naming %s", err, tt.variable)
			}
		})
	}
}

// One address serves the three PSPs: dLocal at the root, Stripe under
// /stripe and Mercado Pago under /mercadopago, each behind its own
// credentials, and each notifying its own URL.
func TestRunServesThreePSPs(t *testing.T) {
	t.Parallel()
	hooks := map[string]chan string{"stripe": make(chan string, 8), "mercadopago": make(chan string, 8)}
	hook := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		hooks[strings.TrimPrefix(r.URL.Path, "/")] <- r.URL.Path
	}))
	t.Cleanup(hook.Close)
	env := map[string]string{"PSP_ADDR": "127.0.0.1:0", "STRIPE_API_KEY": "sk_test_cmd", "MERCADOPAGO_ACCESS_TOKEN": "TEST-cmd",
		"STRIPE_NOTIFY_URL": hook.URL + "/stripe", "MERCADOPAGO_NOTIFY_URL": hook.URL + "/mercadopago"}
	log, logs := observed(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, log, nil, func(k string) string { return env[k] }) }()
	base := "http://" + listeningAddr(t, logs)

	for _, c := range []struct{ path, body string }{
		{"/stripe/sandbox/payment_intents", `{"amount": 1000, "currency": "UYU", "order_id": "o-1"}`},
		{"/mercadopago/sandbox/payments", `{"amount": "10.00", "currency": "UYU", "external_reference": "o-1"}`},
	} {
		resp, err := http.Post(base+c.path, "application/json", strings.NewReader(c.body))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %v %v", c.path, resp, err)
		}
		resp.Body.Close()
	}
	for psp, ch := range hooks {
		if got := <-ch; got != "/"+psp {
			t.Fatalf("%s notified %s", psp, got)
		}
	}
	for path, token := range map[string]string{"/stripe/v1/payment_intents": "sk_test_cmd", "/mercadopago/v1/payments/search": "TEST-cmd"} {
		for _, bearer := range []string{token, "wrong"} {
			req, _ := http.NewRequest(http.MethodGet, base+path, nil)
			req.Header.Set("Authorization", "Bearer "+bearer)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := bearer == token; (resp.StatusCode == http.StatusOK) != want {
				t.Fatalf("GET %s with %q: %d", path, bearer, resp.StatusCode)
			}
		}
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("dLocal's /healthz at the root: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}
