package receipts

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

func newWriter(t *testing.T) (*Writer, *pgxpool.Pool) {
	dsn := pgtest.NewDatabase(t)
	if err := db.Migrate(t.Context(), dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return New(p, prometheus.NewRegistry(), 1, 64), p
}

func params(key, kind string) store.ReceiptInsertParams {
	return store.ReceiptInsertParams{Source: "s", Scope: "s", Kind: kind, DedupeKey: key, EventID: key, EventType: "t", Body: []byte("{}")}
}

// held runs inserts while the writer's only slot is taken, so they all
// queue, then frees the slot and returns each insert's outcome.
func held(t *testing.T, w *Writer, ps []store.ReceiptInsertParams) ([]bool, []error) {
	t.Helper()
	w.slots <- struct{}{}
	inserted, errs := make([]bool, len(ps)), make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { inserted[i], errs[i] = w.Insert(t.Context(), p) })
	}
	waitQueued(t, w, len(ps))
	<-w.slots
	wg.Wait()
	return inserted, errs
}

func waitQueued(t *testing.T, w *Writer, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(w.queue) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d inserts queued", len(w.queue), n)
		}
	}
}

func commits(t *testing.T, w *Writer) (count uint64, receipts float64) {
	t.Helper()
	var m dto.Metric
	if err := w.sizes.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func rows(t *testing.T, p *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := p.QueryRow(t.Context(), `SELECT count(*) FROM ingest.webhook_receipts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Receipts queued behind a commit in flight are committed together, once;
// three deliveries of one event in that group make one receipt, and only
// one of them is told it is new.
func TestQueuedReceiptsShareOneCommit(t *testing.T) {
	w, p := newWriter(t)
	var ps []store.ReceiptInsertParams
	for i := range 8 {
		ps = append(ps, params(fmt.Sprint("event-", i), "generic"))
	}
	ps = append(ps, params("event-0", "generic"), params("event-0", "generic"))
	inserted, errs := held(t, w, ps)
	news := 0
	for i := range ps {
		if errs[i] != nil {
			t.Fatalf("insert %d: %v", i, errs[i])
		}
		if inserted[i] {
			news++
		}
	}
	if news != 8 || rows(t, p) != 8 {
		t.Fatalf("%d inserts told new, %d rows; want 8 and 8", news, rows(t, p))
	}
	if n, sum := commits(t, w); n != 1 || sum != 10 {
		t.Fatalf("%d commits of %v receipts in all; want 1 of 10", n, sum)
	}
}

// A receipt the database refuses fails alone: the others of its group are
// committed and told so.
func TestRefusedReceiptFailsAlone(t *testing.T) {
	w, p := newWriter(t)
	inserted, errs := held(t, w, []store.ReceiptInsertParams{params("a", "generic"), params("b", "no-such-kind"), params("c", "generic")})
	if errs[1] == nil || errs[0] != nil || errs[2] != nil || !inserted[0] || !inserted[2] {
		t.Fatalf("inserted %v, errors %v; want only the second to fail", inserted, errs)
	}
	if n := rows(t, p); n != 2 {
		t.Fatalf("%d rows; want 2", n)
	}
}

// A caller that gives up while its receipt waits gets its context's error;
// the receipt is still committed by the next caller's commit, so a retried
// delivery finds it as a duplicate.
func TestAbandonedReceiptIsStillCommitted(t *testing.T) {
	w, p := newWriter(t)
	w.slots <- struct{}{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := w.Insert(ctx, params("gave-up", "generic")); done <- err }()
	waitQueued(t, w, 1)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("abandoned insert returned no error")
	}
	<-w.slots
	if _, err := w.Insert(t.Context(), params("next", "generic")); err != nil {
		t.Fatal(err)
	}
	if n := rows(t, p); n != 2 {
		t.Fatalf("%d rows; want the abandoned receipt and the next one", n)
	}
	inserted, err := w.Insert(t.Context(), params("gave-up", "generic"))
	if err != nil || inserted {
		t.Fatalf("retried delivery: inserted=%v err=%v; want a duplicate", inserted, err)
	}
}
