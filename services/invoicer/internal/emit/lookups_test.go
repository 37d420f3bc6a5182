package emit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// together is the sandbox's client (hooked) whose look-up of several
// references answers what answer gives.
type together struct {
	hooked
	answer func(ctx context.Context, refs []string) ([]fiscal.Held, error)
}

func (g together) LookupReferences(ctx context.Context, refs []string) ([]fiscal.Held, error) {
	return g.answer(ctx, refs)
}

// togetherWorker is a worker whose provider is g over the sandbox's client.
func togetherWorker(tb testing.TB, env *invoicertest.Env, g together) worker {
	tb.Helper()
	reg := prometheus.NewRegistry()
	g.Client = env.Client(tb, 5*time.Second)
	return worker{Emitter: emit.New(env.Store, g, zaptest.NewLogger(tb), reg, fast(tb)), reg: reg}
}

// lookups returns the outcomes of d's recorded look-ups.
func lookups(t *testing.T, env *invoicertest.Env, d store.Document) []string {
	t.Helper()
	var out []string
	for _, a := range env.Attempts(t, d.ID) {
		if a.Operation == "lookup" {
			out = append(out, a.Outcome)
		}
	}
	return out
}

func TestFreshDocumentsAreLookedUpInOneCall(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	docs := recordPayments(t, env, "pay-together", 4)
	// Another system issued a document under the third one's reference.
	env.Hold(t, docs[2], fiscal.StatusPending, "another system's")
	if _, err := env.Pool.Exec(context.Background(), "UPDATE invoicer.fiscal_documents SET due_at = now() WHERE id = $1", docs[2].ID); err != nil {
		t.Fatal(err)
	}
	before := env.Sandbox.Stats()
	w := newWorker(t, env, fast(t), 5*time.Second)

	if n, err := w.Round(context.Background()); err != nil || n != 4 {
		t.Fatalf("round claimed %d (%v), want 4", n, err)
	}
	after := env.Sandbox.Stats()
	if q, e := after.Queries-before.Queries, after.Emits-before.Emits; q != 1 || e != 3 {
		t.Fatalf("%d queries and %d sends at the sandbox, want 1 look-up of the four and 3 sends", q, e)
	}
	for i, d := range docs {
		got := env.Document(t, d.Reference)
		want, found := fiscal.StatusAuthorized, "none"
		if i == 2 {
			want, found = fiscal.StatusNeedsAttention, "one"
		}
		if got.Status != want {
			t.Errorf("document %d is %s, want %s", i, got.Status, want)
		}
		if l := lookups(t, env, d); len(l) != 1 || l[0] != found {
			t.Errorf("document %d's look-ups on record: %v, want one that found %s", i, l, found)
		}
	}
}

func TestAnswerUnderAReferenceNotAskedForIsLookedUpAlone(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	docs := recordPayments(t, env, "pay-foreign", 3)
	alone := 0
	w := togetherWorker(t, env, together{hooked: hooked{before: func(string) { alone++ }},
		answer: func(context.Context, []string) ([]fiscal.Held, error) {
			return []fiscal.Held{{Reference: "123456789012345678", Type: fiscal.CFEType(101)}}, nil
		}})

	if n, err := w.Round(context.Background()); err != nil || n != 3 {
		t.Fatalf("round claimed %d (%v), want 3", n, err)
	}
	if alone != 3 {
		t.Fatalf("%d look-ups alone, want one for each of the 3 documents", alone)
	}
	for i, d := range docs {
		if got := env.Document(t, d.Reference); got.Status != fiscal.StatusAuthorized {
			t.Errorf("document %d is %s, want authorized", i, got.Status)
		}
		if l := lookups(t, env, d); len(l) != 1 || l[0] != "none" {
			t.Errorf("document %d's look-ups on record: %v, want its own, which found none", i, l)
		}
	}
}

func TestFailedLookUpTogetherSendsNothing(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	docs := recordPayments(t, env, "pay-unanswered", 3)
	w := togetherWorker(t, env, together{answer: func(context.Context, []string) ([]fiscal.Held, error) {
		return nil, errors.New("connection reset")
	}})

	if n, err := w.Round(context.Background()); err != nil || n != 3 {
		t.Fatalf("round claimed %d (%v), want 3", n, err)
	}
	if n := env.Sandbox.Stats().Emits; n != 0 {
		t.Fatalf("%d sends after a failed look-up, want none", n)
	}
	for i, d := range docs {
		got := env.Document(t, d.Reference)
		if got.Status != fiscal.StatusPending || got.UnknownSince != nil || got.LastError == nil {
			t.Errorf("document %d is %s, unknown since %v, error %v; want pending, unmarked, with the look-up's error", i, got.Status, got.UnknownSince, got.LastError)
		}
		if l := lookups(t, env, d); len(l) != 1 || l[0] != "error" {
			t.Errorf("document %d's look-ups on record: %v, want one that failed", i, l)
		}
	}
}
