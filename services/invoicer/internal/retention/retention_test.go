package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/retention"
)

// document inserts a document in status with one attempt per age given
// (how long ago it was made, oldest first) and returns its id.
func document(tb testing.TB, env *invoicertest.Env, ref, status string, ages ...time.Duration) int64 {
	tb.Helper()
	ctx := context.Background()
	var id int64
	err := env.Pool.QueryRow(ctx, `INSERT INTO invoicer.fiscal_documents
		(source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer, status)
		VALUES ('payment', $1, 'invoice', 'payment:' || $1 || ':paid', $2, 101, 1000, 'UYU', '{}', $3) RETURNING id`,
		ref, "9"+ref[len(ref)-1:], status).Scan(&id)
	if err != nil {
		tb.Fatal(err)
	}
	for _, age := range ages {
		if _, err := env.Pool.Exec(ctx, `INSERT INTO invoicer.emission_attempts (document_id, operation, outcome, latency_ms, created_at)
			VALUES ($1, 'emit', 'sent', 5, now() - make_interval(secs => $2))`, id, age.Seconds()); err != nil {
			tb.Fatal(err)
		}
	}
	return id
}

// TestPruneKeepsTheLastAttemptAndUnfinishedDocuments prunes, in batches of
// two, attempts older than 30 days: a final document keeps its last attempt
// (or its recent ones), documents still in flight or in needs_attention
// keep all of theirs.
func TestPruneKeepsTheLastAttemptAndUnfinishedDocuments(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	day := 24 * time.Hour
	old := []time.Duration{90 * day, 60 * day, 40 * day}
	authorized := document(t, env, "doc-1", "authorized", old...)
	withRecent := document(t, env, "doc-2", "rejected", append(old, day)...)
	pending := document(t, env, "doc-3", "pending", old...)
	attention := document(t, env, "doc-4", "needs_attention", old...)
	voided := document(t, env, "doc-5", "voided", 50*day)

	reg := prometheus.NewRegistry()
	p := retention.NewPruner(env.Store, zaptest.NewLogger(t), reg, retention.Config{Retention: 30 * day, Interval: time.Hour, Batch: 2})
	if err := p.Prune(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		id   int64
		want int
	}{{"authorized", authorized, 1}, {"rejected with a recent attempt", withRecent, 1}, {"pending", pending, 3},
		{"needs_attention", attention, 3}, {"voided with one attempt", voided, 1}} {
		if got := len(env.Attempts(t, c.id)); got != c.want {
			t.Errorf("%s document keeps %d attempts, want %d", c.name, got, c.want)
		}
	}
	last := env.Attempts(t, withRecent)
	if len(last) == 1 && time.Since(last[0].At) > 2*day {
		t.Errorf("rejected document kept an attempt from %s, want its newest", last[0].At)
	}
	if got := invoicertest.Metric(t, reg, "onceflow_invoicer_pruned_total", nil); got != 5 {
		t.Errorf("pruned_total = %v, want 5", got)
	}
	if err := p.Prune(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := invoicertest.Metric(t, reg, "onceflow_invoicer_pruned_total", nil); got != 5 {
		t.Errorf("a second pass pruned %v in all, want still 5", got)
	}
}

// TestPruneStartsWhereTheLastPassStopped checks that a pass does not read
// again what the last one passed, so a document that reached a final status
// after a pass went by keeps its attempts until the next pass from the
// lowest id, FullEvery after the last.
func TestPruneStartsWhereTheLastPassStopped(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	day := 24 * time.Hour
	late := document(t, env, "doc-1", "pending", 90*day, 60*day, 40*day)
	authorized := document(t, env, "doc-2", "authorized", 50*day, 45*day)

	reg := prometheus.NewRegistry()
	p := retention.NewPruner(env.Store, zaptest.NewLogger(t), reg, retention.Config{Retention: 30 * day, Interval: time.Hour, Batch: 2})
	now := time.Now()
	if err := p.Prune(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	if got := len(env.Attempts(t, authorized)); got != 1 {
		t.Fatalf("authorized document keeps %d attempts after the first pass, want 1", got)
	}
	if _, err := env.Pool.Exec(t.Context(), `UPDATE invoicer.fiscal_documents SET status = 'authorized' WHERE id = $1`, late); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		at   time.Time
		want int
	}{{"an hour later", now.Add(time.Hour), 3}, {"a pass from the lowest id", now.Add(retention.FullEvery), 1}} {
		if err := p.Prune(t.Context(), c.at); err != nil {
			t.Fatal(err)
		}
		if got := len(env.Attempts(t, late)); got != c.want {
			t.Errorf("%s: the document authorized after the first pass keeps %d attempts, want %d", c.name, got, c.want)
		}
	}
	if got := invoicertest.Metric(t, reg, "onceflow_invoicer_pruned_total", nil); got != 3 {
		t.Errorf("pruned_total = %v, want 3", got)
	}
}
