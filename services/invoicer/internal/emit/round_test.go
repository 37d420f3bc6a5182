package emit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// recordPayments records n payment documents named prefix-0, prefix-1, ...
func recordPayments(t *testing.T, env *invoicertest.Env, prefix string, n int) []store.Document {
	t.Helper()
	docs := make([]store.Document, n)
	for i := range docs {
		docs[i] = env.Record(t, invoicertest.Payment(fmt.Sprint(prefix, "-", i), 100_00, false))
	}
	return docs
}

// commits counts the distinct transactions that last wrote the rows query
// selects (their xmin) for the documents ids.
func commits(t *testing.T, env *invoicertest.Env, query string, ids []int64) int {
	t.Helper()
	var n int
	if err := env.Pool.QueryRow(context.Background(), query, ids).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRoundSharesItsCommits(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	docs := recordPayments(t, env, "pay-shared", 3)
	w := newWorker(t, env, fast(t), 0)

	if n, err := w.Round(context.Background()); err != nil || n != 3 {
		t.Fatalf("round claimed %d (%v), want 3", n, err)
	}
	var ids []int64
	for _, d := range docs {
		if got := env.Document(t, d.Reference); got.Status != fiscal.StatusAuthorized {
			t.Fatalf("%s is %s, want authorized", d.Reference, got.Status)
		}
		ids = append(ids, d.ID)
	}
	// The look-ups were recorded with the send markers, the sends with the
	// results: one commit each for the whole batch.
	const byOp = "SELECT count(DISTINCT xmin::text) FROM invoicer.emission_attempts WHERE document_id = ANY($1) AND operation = "
	if n := commits(t, env, byOp+"'lookup'", ids); n != 1 {
		t.Errorf("the 3 look-ups were recorded by %d commits, want 1 (the shared send marker)", n)
	}
	if n := commits(t, env, byOp+"'emit'", ids); n != 1 {
		t.Errorf("the 3 sends were recorded by %d commits, want 1 (the shared save)", n)
	}
	const saved = "SELECT count(DISTINCT xmin::text) FROM invoicer.fiscal_documents WHERE id = ANY($1)"
	if n := commits(t, env, saved, ids); n != 1 {
		t.Errorf("the 3 results were saved by %d commits, want 1", n)
	}
	if n := len(env.Outbox(t)); n != 3 {
		t.Errorf("%d notifications, want one per authorized document", n)
	}
}

func TestResultThatCannotBeSavedFailsAlone(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	docs := recordPayments(t, env, "pay-nul", 3)
	bad := docs[1]
	// PostgreSQL refuses a NUL byte in text: this send's error cannot be
	// recorded, which fails the batch's shared save.
	w := hookedWorker(t, env, fast(t), hooked{beforeEmit: func(ref string) error {
		if ref == bad.Reference {
			return errors.New("gateway said \x00")
		}
		return nil
	}})

	if n, err := w.Round(context.Background()); err != nil || n != 3 {
		t.Fatalf("round claimed %d (%v), want 3", n, err)
	}
	for _, d := range []store.Document{docs[0], docs[2]} {
		if got := env.Document(t, d.Reference); got.Status != fiscal.StatusAuthorized {
			t.Errorf("neighbour %s is %s, want authorized", d.Reference, got.Status)
		}
	}
	// Unsaved after a send whose outcome is unknown, it looks like the
	// document of a worker that died during the send: marked, still pending.
	if got := env.Document(t, bad.Reference); got.Status != fiscal.StatusPending || got.UnknownSince == nil {
		t.Errorf("the unsaved document is %s, unknown since %v; want pending with its send marker", got.Status, got.UnknownSince)
	}
	if got := invoicertest.Metric(t, w.reg, "onceflow_invoicer_emission_outcomes_total", map[string]string{"outcome": "sent"}); got != 2 {
		t.Errorf("%v documents counted sent, want 2", got)
	}
}

func TestShutdownDuringSendsUndoesTheUnsentMarkers(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	docs := recordPayments(t, env, "pay-stop", 3)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// Shutdown begins while the first document is sent.
	w := hookedWorker(t, env, fast(t), hooked{beforeEmit: func(ref string) error {
		if ref == docs[0].Reference {
			stop()
		}
		return nil
	}})

	if n, err := w.Round(ctx); err != nil || n != 3 {
		t.Fatalf("round claimed %d (%v), want 3", n, err)
	}
	if got := env.Document(t, docs[0].Reference); got.Status != fiscal.StatusAuthorized {
		t.Fatalf("the document in flight is %s, want authorized: a send begun is finished", got.Status)
	}
	if n := env.Sandbox.Stats().Emits; n != 1 {
		t.Fatalf("%d sends, want only the one begun before shutdown", n)
	}
	for _, d := range docs[1:] {
		got := env.Document(t, d.Reference)
		if got.Status != fiscal.StatusPending || got.UnknownSince != nil || got.LeaseToken != nil {
			t.Errorf("unsent %s is %s, unknown since %v, token %v; want pending, no send marker, no claim",
				d.Reference, got.Status, got.UnknownSince, got.LeaseToken)
		}
	}
}

// Each claim's size is observed, an empty one too, so that the share of
// claims that found nothing is seen.
func TestEachClaimsSizeIsObserved(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	recordPayments(t, env, "pay-size", 3)
	w := hookedWorker(t, env, fast(t), hooked{})
	for _, want := range []int{3, 0} {
		if n, err := w.Round(context.Background()); err != nil || n != want {
			t.Fatalf("round claimed %d (%v), want %d", n, err, want)
		}
	}
	h := invoicertest.Histogram(t, w.reg, "onceflow_invoicer_emit_claimed_documents")
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 3 || h.GetBucket()[0].GetUpperBound() != 0 || h.GetBucket()[0].GetCumulativeCount() != 1 {
		t.Errorf("claims histogram: %d claims, %v documents, %d at most 0; want 2, 3, 1", h.GetSampleCount(), h.GetSampleSum(), h.GetBucket()[0].GetCumulativeCount())
	}
}

func TestRunWorksAtMostWorkersBatchesAtOnce(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	docs := recordPayments(t, env, "pay-run", 5)
	cfg := fast(t)
	cfg.Batch, cfg.Workers = 1, 2
	entered, release := make(chan string, len(docs)), make(chan struct{})
	w := hookedWorker(t, env, cfg, hooked{before: func(ref string) {
		entered <- ref
		<-release
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	defer func() { cancel(); <-done }()

	for range cfg.Workers {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the two workers never began their look-ups")
		}
	}
	select {
	case ref := <-entered:
		t.Fatalf("a third batch (%s) was worked while both workers were busy", ref)
	case <-time.After(100 * time.Millisecond):
	}
	if n := claimedNow(t, env); n != cfg.Workers {
		t.Errorf("%d documents under a claim while both workers were busy, want %d: nothing is claimed for a worker that is not free", n, cfg.Workers)
	}
	close(release)
	for _, d := range docs {
		testwait.Until(t, 30*time.Second, 10*time.Millisecond, "document "+d.Reference+" authorized by Run", func() bool {
			return env.Document(t, d.Reference).Status == fiscal.StatusAuthorized
		})
	}
	if h := invoicertest.Histogram(t, w.reg, "onceflow_invoicer_emit_claimed_documents"); h.GetSampleSum() != float64(len(docs)) {
		t.Errorf("claims took %v documents, want %d: each once", h.GetSampleSum(), len(docs))
	}
}

// claimedNow counts the documents whose claim's lease has not ended.
func claimedNow(t *testing.T, env *invoicertest.Env) int {
	t.Helper()
	var n int
	if err := env.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM invoicer.fiscal_documents WHERE lease_token IS NOT NULL AND lease_expires_at > now()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A worker sends a round's documents Config.Sends at once: each send is
// let through only once all of the round's have begun, so a worker that
// sent them one after another would stall on the first, and that send
// fails, naming how many had begun.
func TestRoundSendsItsDocumentsAtOnce(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	const n = 5
	docs := recordPayments(t, env, "pay-at-once", n)
	var mu sync.Mutex
	begun, all := 0, make(chan struct{})
	cfg := fast(t)
	cfg.Sends = n
	w := hookedWorker(t, env, cfg, hooked{beforeEmit: func(string) error {
		mu.Lock()
		if begun++; begun == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return nil
		case <-time.After(10 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("only %d of %d sends had begun", begun, n)
		}
	}})

	if got, err := w.Round(context.Background()); err != nil || got != n {
		t.Fatalf("round claimed %d (%v), want %d", got, err, n)
	}
	for _, d := range docs {
		if got := env.Document(t, d.Reference); got.Status != fiscal.StatusAuthorized {
			t.Errorf("%s is %s after one round (%s), want authorized", d.Reference, got.Status, deref(got.LastError))
		}
	}
	if got := env.Sandbox.Stats().Emits; got != n {
		t.Fatalf("%d sends reached the sandbox, want %d", got, n)
	}
}
