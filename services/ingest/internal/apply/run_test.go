package apply_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// gated is a PSP whose payment re-fetches each report on entered and then
// wait for release.
type gated struct {
	apply.PSP
	entered chan string
	release chan struct{}
}

func (g gated) Payment(ctx context.Context, id string) (psp.Payment, error) {
	g.entered <- id
	<-g.release
	return g.PSP.Payment(ctx, id)
}

func TestRunWorksAtMostWorkersBatchesAtOnce(t *testing.T) {
	e := newEnv(t)
	const receipts, workers = 5, 2
	for i := range receipts {
		order := fmt.Sprintf("o-run-%d", i)
		e.order(order, 5000)
		e.receive(e.pay(order, 50, "UYU"))
	}
	g := gated{PSP: e.client, entered: make(chan string, receipts), release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	w := apply.NewWorker(e.store, apply.PSPs{"dlocal": g}, zaptest.NewLogger(t), reg, apply.Config{
		Batch: 1, Workers: workers, Lease: time.Minute, Poll: 10 * time.Millisecond, MaxAttempts: 5,
		Backoff: backoff.Policy{Base: time.Millisecond, Cap: time.Millisecond},
	}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	defer func() { cancel(); <-done }()

	for range workers {
		select {
		case <-g.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the two workers never began their re-fetches")
		}
	}
	select {
	case id := <-g.entered:
		t.Fatalf("a third batch (payment %s) was worked while both workers were busy", id)
	case <-time.After(100 * time.Millisecond):
	}
	if n := e.scalar(`SELECT count(*)::text FROM ingest.webhook_receipts WHERE status = 'pending' AND lease_expires_at > now()`); n != fmt.Sprint(workers) {
		t.Errorf("%s receipts under a claim while both workers were busy, want %d: nothing is claimed for a worker that is not free", n, workers)
	}
	close(g.release)
	testwait.Until(t, 30*time.Second, 10*time.Millisecond, "every receipt applied by Run", func() bool {
		return e.scalar(`SELECT count(*)::text FROM ingest.webhook_receipts WHERE status = 'done'`) == fmt.Sprint(receipts)
	})
	if got := e.scalar("SELECT count(*)::text FROM ingest.outbox"); got != fmt.Sprint(receipts) {
		t.Errorf("%s invoice events, want %d", got, receipts)
	}
}

// A receipt this process inserted goes to its worker in memory, claimed at
// its insert: the worker's round claims from the table, finds it held,
// and takes it from the handoff instead, to apply it under the handoff's
// token.
func TestAReceiptHandedOffIsAppliedWithoutAClaimFromTheTable(t *testing.T) {
	e := newEnv(t)
	h := store.NewHandoff(time.Minute, 10)
	st := store.New(e.pool)
	st.UseHandoff(h)
	w := apply.NewWorker(st, apply.PSPs{"dlocal": e.client}, zaptest.NewLogger(t), prometheus.NewRegistry(), apply.Config{
		Batch: 10, Lease: time.Minute, Poll: time.Hour, MaxAttempts: 5, Handoff: h,
	}, nil)
	e.order("o-handed", 5000)
	id := e.call("/payments", map[string]any{"amount": 50, "currency": "UYU", "country": "UY", "payment_method_id": "CARD",
		"order_id": "o-handed", "description": "100"})
	e.force(id, "PAID")
	if _, err := st.InsertReceipt(t.Context(), store.NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: string(webhook.KindPSP),
		DedupeKey: "handed", EventID: id, EventType: "payment", Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Round(t.Context()); err != nil || n != 1 {
		t.Fatalf("the round took %d receipts (%v), want 1", n, err)
	}
	if got := e.scalar("SELECT status || ' ' || (lease_token IS NULL)::text FROM ingest.webhook_receipts WHERE dedupe_key = 'handed'"); got != "done true" {
		t.Errorf("receipt %q, want done and its lease ended", got)
	}
	if got := e.scalar("SELECT count(*)::text FROM ingest.outbox WHERE event_key = $1", "payment:"+id+":paid"); got != "1" {
		t.Errorf("invoice events = %s, want 1", got)
	}
}
