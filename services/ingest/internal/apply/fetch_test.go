package apply_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// gatedPSP passes every payment fetch on to the sandbox's adapter only
// once want fetches have begun, so a worker that fetched its batch one
// after another would stall on the first: that one fails when the wait
// runs out, naming how many had begun.
type gatedPSP struct {
	apply.PSP
	want int
	wait time.Duration

	mu    sync.Mutex
	begun int
	all   chan struct{}
}

func (g *gatedPSP) Payment(ctx context.Context, id string) (psp.Payment, error) {
	g.mu.Lock()
	if g.begun++; g.begun == g.want {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
		return g.PSP.Payment(ctx, id)
	case <-time.After(g.wait):
		g.mu.Lock()
		defer g.mu.Unlock()
		return psp.Payment{}, fmt.Errorf("only %d of %d fetches had begun", g.begun, g.want)
	}
}

// A worker fetches a batch's payments all at once, then records them
// together: every receipt of the batch is applied in one round.
func TestBatchIsFetchedAllAtOnce(t *testing.T) {
	e := newEnv(t)
	const batch = 5
	gate := &gatedPSP{PSP: e.client, want: batch, wait: 10 * time.Second, all: make(chan struct{})}
	w := apply.NewWorker(e.store, apply.PSPs{"dlocal": gate}, zaptest.NewLogger(t), prometheus.NewRegistry(), apply.Config{
		Batch: batch, Lease: time.Minute, Poll: time.Second, MaxAttempts: 5,
		Backoff: backoff.Policy{Base: time.Millisecond, Cap: time.Millisecond},
	}, nil)
	for i := range batch {
		order := fmt.Sprintf("o-all-at-once-%d", i)
		e.order(order, 5000)
		id := e.call("/payments", map[string]any{"amount": 50, "currency": "UYU", "country": "UY", "payment_method_id": "CARD", "order_id": order})
		_, err := e.store.InsertReceipt(t.Context(), store.NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: string(webhook.KindPSP),
			DedupeKey: "payment:" + id + ":PAID", EventID: id, EventType: "payment", Body: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := w.Round(t.Context()); err != nil || n != batch {
		t.Fatalf("round claimed %d (%v), want %d", n, err, batch)
	}
	if got := e.scalar("SELECT count(*)::text FROM ingest.webhook_receipts WHERE status = 'done'"); got != fmt.Sprint(batch) {
		t.Fatalf("%s receipts done after one round, want %d: %s", got, batch,
			e.scalar("SELECT coalesce(string_agg(DISTINCT last_error, '; '), '') FROM ingest.webhook_receipts"))
	}
	if got := e.scalar("SELECT count(*)::text FROM ingest.outbox"); got != fmt.Sprint(batch) {
		t.Fatalf("%s invoice events, want %d", got, batch)
	}
}
