package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// span is the part of an exported span (the console exporter's JSON) the
// test reads.
type span struct {
	Name        string
	SpanContext struct{ TraceID string }
}

// TestOnePaymentIsOneTrace follows a payment from the webhook to the
// provider call: with OTEL_TRACES_EXPORTER=console, ingest's webhook span
// and the invoicer's emission span share one trace id, carried through the
// receipt, the outbox row, the SQS message and the document.
func TestOnePaymentIsOneTrace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := stack.StartWith(ctx, t.TempDir(), stack.Options{Env: []string{"OTEL_TRACES_EXPORTER=console"}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			s.Stop()
		}
	}()
	payment, err := s.Pay(ctx, fmt.Sprintf("trace-%d", time.Now().UnixNano()), 30000)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAuthorized(ctx, "payment:"+payment, time.Minute); err != nil {
		t.Fatal(err)
	}
	s.Stop() // flushes the exporters
	stopped = true
	received := spansNamed(t, filepath.Join(s.Dir, "ingest-1.log"), "webhook.receive")
	emitted := spansNamed(t, filepath.Join(s.Dir, "invoicer-1.log"), "document.emit")
	if len(received) == 0 || len(emitted) == 0 {
		t.Fatalf("spans: %d webhook.receive, %d document.emit; want both", len(received), len(emitted))
	}
	traces := map[string]bool{}
	for _, sp := range received {
		traces[sp.SpanContext.TraceID] = true
	}
	for _, sp := range emitted {
		if traces[sp.SpanContext.TraceID] {
			return
		}
	}
	t.Fatalf("no document.emit span shares a trace with a webhook.receive span: %+v vs %+v", received, emitted)
}

// spansNamed reads the console exporter's spans called name from a log.
func spansNamed(t *testing.T, path, name string) []span {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []span
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var sp span
		if json.Unmarshal(sc.Bytes(), &sp) == nil && sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}
