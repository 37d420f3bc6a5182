package emit_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// skewed is cfg on a pod whose clock is off by skew, with a settle window
// shorter than the skew.
func skewed(tb testing.TB, skew time.Duration) emit.Config {
	tb.Helper()
	cfg := fast(tb)
	cfg.Settle = time.Minute
	cfg.Clock = func() time.Time { return time.Now().Add(skew) }
	return cfg
}

// timing is a document's times as the database sees them: seconds from
// unknown_since to now() (NaN when unset) and from now() to due_at.
func timing(tb testing.TB, env *invoicertest.Env, id int64) (unknownFor, dueIn float64) {
	tb.Helper()
	err := env.Pool.QueryRow(context.Background(), `SELECT coalesce(extract(epoch FROM now() - unknown_since)::float8, 'NaN'),
extract(epoch FROM due_at - now())::float8 FROM invoicer.fiscal_documents WHERE id = $1`, id).Scan(&unknownFor, &dueIn)
	if err != nil {
		tb.Fatal(err)
	}
	return unknownFor, dueIn
}

// A worker died during a send (the database wrote its marker); a pod whose
// clock runs ahead by more than the settle window claims the document next.
func TestPodClockAheadKeepsTheSettleWindow(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	d := env.Record(t, invoicertest.Payment("pay-ahead", 100_00, false))
	token := uuid.New()
	if _, err := env.Store.ClaimDue(ctx, token, time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.MarkSending(ctx, token, time.Minute, []store.Claimed{{ID: d.ID, Status: d.Status}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Pool.Exec(ctx, "UPDATE invoicer.fiscal_documents SET lease_expires_at = now() - interval '1 second' WHERE id = $1", d.ID); err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, env, skewed(t, 2*time.Minute), 5*time.Second)

	if n, err := w.Round(ctx); err != nil || n != 1 {
		t.Fatalf("round claimed %d (%v), want the unknown document", n, err)
	}
	if got := env.Document(t, d.Reference); got.Status != fiscal.StatusUnknown || env.Sandbox.Stats().Emits != 0 {
		t.Fatalf("%s after %d sends; want unknown, settling, nothing sent inside the settle window", got.Status, env.Sandbox.Stats().Emits)
	}
	// Due when the window ends by the database's clock: a minute after the
	// marker, less the moment that has passed.
	if unknownFor, dueIn := timing(t, env, d.ID); math.Abs(unknownFor+dueIn-60) > 5 {
		t.Fatalf("unknown for %.1f s and due in %.1f s, want due 60 s after the marker", unknownFor, dueIn)
	}
}

// An ambiguous send by a pod whose clock runs behind by more than the
// settle window; a pod with the right time comes next.
func TestPodClockBehindKeepsTheSettleWindow(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	d := env.Record(t, invoicertest.Payment("pay-behind", 100_00, false))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{FailBefore: 1}) // a 503: the send's outcome is unknown
	behind := newWorker(t, env, skewed(t, -2*time.Minute), 5*time.Second)

	if n, err := behind.Round(ctx); err != nil || n != 1 {
		t.Fatalf("round claimed %d (%v), want 1", n, err)
	}
	if got := env.Document(t, d.Reference); got.Status != fiscal.StatusUnknown || env.Sandbox.Stats().Emits != 1 {
		t.Fatalf("%s after %d sends; want unknown after one", got.Status, env.Sandbox.Stats().Emits)
	}
	if unknownFor, dueIn := timing(t, env, d.ID); math.Abs(unknownFor) > 5 || math.Abs(dueIn-60) > 5 {
		t.Fatalf("unknown for %.1f s, due in %.1f s by the database's clock; want unknown since now, due in 60 s", unknownFor, dueIn)
	}
	right := newWorker(t, env, fast(t), 5*time.Second)
	if _, err := right.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if n := env.Sandbox.Stats().Emits; n != 1 {
		t.Fatalf("%d sends, want the one: the settle window was cut short", n)
	}
}
