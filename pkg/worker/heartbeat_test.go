package worker

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/httpserver"
)

// A loop that beat and then stops beating for the stall timeout makes the
// process stalled; a loop that never beat is not held against it.
func TestStalledLoops(t *testing.T) {
	var b beats
	b.stallAfter = time.Minute
	live := b.watch(context.Background(), "apply worker")
	b.watch(context.Background(), "never beats")
	Beat(live)
	now := time.Now()
	if err := b.stalled(now.Add(30 * time.Second)); err != nil {
		t.Fatalf("stalled 30 s after a beat: %v", err)
	}
	if err := b.stalled(now.Add(2 * time.Minute)); err == nil {
		t.Fatal("not stalled two minutes after the last beat")
	}
	Beat(context.Background()) // outside a watched loop: a no-op
}

// /healthz, asking the group, answers 503 naming the stalled loop.
func TestHealthzReportsAStalledLoop(t *testing.T) {
	s := httpserver.New(zap.NewNop(), httpserver.Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
	g := NewGroup(zap.NewNop(), Config{})
	s.SetLiveness(g)
	loop := g.beats.watch(context.Background(), "loop 1")
	health := func() (int, string) {
		rec := httptest.NewRecorder()
		s.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	Beat(loop)
	if code, _ := health(); code != http.StatusOK {
		t.Fatalf("healthz with a fresh heartbeat = %d", code)
	}
	g.beats.mu.Lock()
	g.beats.stallAfter = time.Nanosecond
	g.beats.mu.Unlock()
	time.Sleep(time.Millisecond)
	code, body := health()
	if code != http.StatusServiceUnavailable {
		t.Fatalf("healthz with a stalled loop = %d, want 503", code)
	}
	if !strings.Contains(body, "loop 1") {
		t.Errorf("healthz body %s does not name the stalled loop", body)
	}
}
