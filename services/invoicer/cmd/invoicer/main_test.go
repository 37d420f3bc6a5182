package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
)

// TestRunEmitsABillingEvent runs the real run on port 0, with one setting
// under its old name, and drives it from outside: /healthz answers, a
// billing event on the queue becomes an authorized document, one at the
// sandbox, and a cancelled context stops run cleanly. The log on stdout
// warns about the old name.
func TestRunEmitsABillingEvent(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	c := sqstest.Client(t)
	_, billing := sqstest.Queue(t, c, "invoicer-run-billing", 5)
	_, provider := sqstest.Queue(t, c, "invoicer-run-provider", 5)
	vars := map[string]string{
		"DATABASE_URL": env.DSN, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "SHUTDOWN_TIMEOUT": "5s",
		"INVOICER_BILLING_QUEUE": billing, "INVOICER_PROVIDER_EVENTS_QUEUE": provider, "CONSUMER_WAIT": "1s",
		"INVOICY_BASE_URL": env.BaseURL, "INVOICY_EMP_CODIGO": invoicertest.EmpCodigo, "INVOICY_EMP_PK": invoicertest.EmpPK,
		"INVOICY_ACCESS_KEY": invoicertest.AccessKey, "INVOICER_EMIT_POLL_INTERVAL": "20ms",
		"INVOICER_BILLING_KEYS": invoicertest.BillingKey, "INVOICER_PROVIDER_EVENTS_KEYS": invoicertest.BillingKey,
	}
	var out syncBuffer
	var runErr error
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = run(ctx, func(k string) string { return vars[k] }, []string{"serve"}, &out)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if runErr != nil {
			t.Errorf("run: %v", runErr)
		}
	})
	base := "http://" + servingAddr(t, &out, done)

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d, want 200", resp.StatusCode)
	}
	b, err := eventsv1.Encode(invoicertest.Payment("pay-run", 250_00, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, invoicertest.SignedMessage(t, billing, string(b))); err != nil {
		t.Fatal(err)
	}
	status := func() (s string) {
		_ = env.Pool.QueryRow(ctx, "SELECT status FROM invoicer.fiscal_documents WHERE source_ref = 'pay-run'").Scan(&s)
		return s
	}
	for deadline := time.Now().Add(30 * time.Second); status() != "authorized"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("document %q, want authorized", status())
		}
	}
	if docs := env.Sandbox.Documents(); len(docs) != 1 {
		t.Fatalf("%d documents at the sandbox, want 1", len(docs))
	}
	for _, want := range []string{`"logger":"invoicer"`, `"old":"CONSUMER_WAIT"`, `"new":"INVOICER_CONSUMER_WAIT"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %s", want)
		}
	}
}

// servingAddr waits for the "serving" line run logs once the HTTP server is
// bound, and returns its address.
func servingAddr(t *testing.T, out *syncBuffer, done <-chan struct{}) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(out.String(), "\n") {
			var entry struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "serving" {
				return entry.Addr
			}
		}
		select {
		case <-done:
			t.Fatalf("run ended before serving:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("run did not log serving:\n%s", out.String())
	return ""
}

// syncBuffer is stdout for run: the logger writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
