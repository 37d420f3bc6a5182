package emit_test

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/rates"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// fast is a configuration with test-sized intervals.
func fast(tb testing.TB) emit.Config {
	tb.Helper()
	summary, err := fiscal.NewDailySummary(48, 5000)
	if err != nil {
		tb.Fatal(err)
	}
	return emit.Config{Batch: 10, Lease: 10 * time.Second, Poll: 10 * time.Millisecond, Settle: 300 * time.Millisecond,
		Retry:   backoff.Policy{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond},
		DGIPoll: backoff.Policy{Base: time.Millisecond, Cap: 5 * time.Millisecond}, Summary: summary, CreditNoteWait: time.Minute,
		Rates: testRates()}
}

// testRates holds the UI at 6.4123 UYU and the dollar at 40.1234 UYU
// (40.123 on a CFE) for yesterday, today and tomorrow in Montevideo.
func testRates() *rates.Memory {
	m := rates.NewMemory()
	today := time.Now().In(fiscal.Montevideo)
	for _, d := range []int{-1, 0, 1} {
		day := today.AddDate(0, 0, d)
		m.Set(rates.UI, day, big.NewRat(64123, 10000))
		m.Set("USD", day, big.NewRat(401234, 10000))
	}
	return m
}

// worker is an emitter with its own metrics registry.
type worker struct {
	*emit.Emitter
	reg *prometheus.Registry
}

func newWorker(tb testing.TB, env *invoicertest.Env, cfg emit.Config, timeout time.Duration) worker {
	tb.Helper()
	reg := prometheus.NewRegistry()
	e := emit.New(env.Store, env.Client(tb, timeout), zaptest.NewLogger(tb), reg, cfg)
	return worker{Emitter: e, reg: reg}
}

// until runs rounds of w until document ref satisfies done, failing the
// test if that has not happened within 30 s.
func until(tb testing.TB, env *invoicertest.Env, w worker, ref string, done func(store.Document) bool) store.Document {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d := env.Document(tb, ref)
		if done(d) {
			return d
		}
		if time.Now().After(deadline) {
			tb.Fatalf("document %s stuck in %s (attempts %d, last error %v, reason %v)", ref, d.Status, d.Attempts, deref(d.LastError), deref(d.AttentionReason))
		}
		if _, err := w.Round(context.Background()); err != nil {
			tb.Fatalf("round: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func settled(d store.Document) bool {
	switch d.Status {
	case fiscal.StatusPending, fiscal.StatusUnknown, fiscal.StatusPendingDGI:
		return false
	}
	return true
}

// operations lists the document's provider calls as operation:outcome.
func operations(tb testing.TB, env *invoicertest.Env, id int64) []string {
	tb.Helper()
	var out []string
	for _, a := range env.Attempts(tb, id) {
		out = append(out, a.Operation+":"+a.Outcome)
	}
	return out
}

func count(ops []string, want string) int {
	n := 0
	for _, op := range ops {
		if op == want {
			n++
		}
	}
	return n
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func TestTimeoutAfterCommitIsAdoptedByLookup(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-timeout", 1220_00, false))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{HangAfterCommit: 1})
	w := newWorker(t, env, fast(t), 300*time.Millisecond)

	d = until(t, env, w, d.Reference, settled)
	ops := operations(t, env, d.ID)
	if d.Status != fiscal.StatusAuthorized || env.Sandbox.CountByReference(d.Reference) != 1 {
		t.Fatalf("status %s with %d documents at the sandbox; want authorized and exactly 1", d.Status, env.Sandbox.CountByReference(d.Reference))
	}
	if count(ops, "emit:ambiguous") != 1 || count(ops, "emit:authorized") != 0 || ops[len(ops)-1] != "lookup:one" {
		t.Fatalf("provider calls %v; want one ambiguous send, adopted by a look-up", ops)
	}
	if d.ProviderNumber == nil || *d.ProviderNumber != int64(env.Sandbox.Documents()[0].Number) {
		t.Fatalf("adopted number %v, sandbox %+v", d.ProviderNumber, env.Sandbox.Documents())
	}
	if keys := env.Outbox(t); len(keys) != 1 || keys[0] != "document:"+d.Reference+":authorized" {
		t.Fatalf("outbox %v, want one authorized notification", keys)
	}
}

func TestServerErrorBeforeActingIsResentOnce(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-5xx", 500_00, false))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{FailBefore: 1})
	w := newWorker(t, env, fast(t), 5*time.Second)

	d = until(t, env, w, d.Reference, settled)
	ops := operations(t, env, d.ID)
	if d.Status != fiscal.StatusAuthorized || env.Sandbox.CountByReference(d.Reference) != 1 {
		t.Fatalf("status %s with %d documents; want authorized and exactly 1", d.Status, env.Sandbox.CountByReference(d.Reference))
	}
	// The 5xx is ambiguous: the resend only happens after look-ups, spanning
	// the settle window, found nothing.
	if count(ops, "emit:ambiguous") != 1 || count(ops, "emit:authorized") != 1 || count(ops, "lookup:none") < 2 {
		t.Fatalf("provider calls %v; want a 5xx, look-ups finding nothing, then one successful send", ops)
	}
}

func TestDuplicateUnderOneReferenceNeedsAttention(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-dup", 100_00, false))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{Duplicate: true})
	w := newWorker(t, env, fast(t), 5*time.Second)

	d = until(t, env, w, d.Reference, settled)
	if d.Status != fiscal.StatusNeedsAttention || !strings.Contains(deref(d.AttentionReason), "2 documents") {
		t.Fatalf("status %s (%v), want needs_attention naming 2 documents", d.Status, deref(d.AttentionReason))
	}
	for range 3 { // a parked document is never claimed again
		if _, err := w.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := env.Sandbox.CountByReference(d.Reference); n != 2 {
		t.Fatalf("%d documents at the sandbox, want the 2 the fault made and no third", n)
	}
	if keys := env.Outbox(t); len(keys) != 1 || !strings.HasPrefix(keys[0], "document:"+d.Reference+":needs_attention") {
		t.Fatalf("outbox %v, want one needs_attention notification", keys)
	}
}

func TestReferenceHeldByAnotherTypeNeedsAttention(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-other-type", 100_00, false))
	// Someone else holds an e-Factura under the e-Ticket's reference.
	other := fiscal.Document{Reference: d.Reference, Type: fiscal.EFactura, IssueDate: time.Now(), Currency: "UYU", TotalMinor: 100,
		Buyer:    fiscal.Buyer{DocType: fiscal.DocRUT, Country: "UY", Number: "210000000019", Name: "Other"},
		Lines:    []fiscal.Line{{Description: "x", Quantity: 1, UnitMinor: 100, AmountMinor: 100}},
		Addendum: fiscal.Addendum("payment", "pay-other-type", fiscal.KindInvoice)}
	if _, err := env.Client(t, 5*time.Second).Emit(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	w := newWorker(t, env, fast(t), 5*time.Second)

	d = until(t, env, w, d.Reference, settled)
	if d.Status != fiscal.StatusNeedsAttention || !strings.Contains(deref(d.AttentionReason), "type 111") {
		t.Fatalf("status %s (%v), want needs_attention naming type 111", d.Status, deref(d.AttentionReason))
	}
	if n := env.Sandbox.CountByReference(d.Reference); n != 1 {
		t.Fatalf("%d documents at the sandbox, want only the other one", n)
	}
}

func TestSendAnsweredWithAnotherDocumentNeedsAttention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ wrong, reason string }{
		{fiscalsim.WrongType, "type 102"},
		{fiscalsim.WrongAddendum, "another source"},
		{fiscalsim.WrongTotal, "total"},
	} {
		t.Run(tc.wrong, func(t *testing.T) {
			t.Parallel()
			env := invoicertest.New(t)
			d := env.Record(t, invoicertest.Payment("pay-wrong-"+tc.wrong, 100_00, false))
			env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{WrongAnswer: tc.wrong})
			w := newWorker(t, env, fast(t), 5*time.Second)

			d = until(t, env, w, d.Reference, settled)
			reason := deref(d.AttentionReason)
			if d.Status != fiscal.StatusNeedsAttention || !strings.Contains(reason, "not ours") || !strings.Contains(reason, tc.reason) {
				t.Fatalf("status %s (%q), want needs_attention: the answer is not ours, naming %q", d.Status, reason, tc.reason)
			}
			if n := env.Sandbox.CountByReference(d.Reference); n != 1 || d.ProviderNumber != nil {
				t.Fatalf("%d documents at the sandbox, number %v adopted; want the one sent, nothing adopted", n, deref(d.ProviderNumber))
			}
			if keys := env.Outbox(t); len(keys) != 1 || !strings.HasPrefix(keys[0], "document:"+d.Reference+":needs_attention") {
				t.Fatalf("outbox %v, want one needs_attention notification", keys)
			}
		})
	}
}

func TestExpiredLeaseLateResultIsRefused(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-lease", 100_00, false))
	// The sandbox stores the document at once and answers 1.5 s later,
	// long after the first worker's 300 ms lease has expired.
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{HangAfterCommit: 1, HangMS: 1500})
	cfg := fast(t)
	cfg.Lease = 300 * time.Millisecond
	first, second := newWorker(t, env, cfg, 5*time.Second), newWorker(t, env, cfg, 5*time.Second)

	done := make(chan error, 1)
	go func() { _, err := first.Round(context.Background()); done <- err }()
	testwait.Until(t, 30*time.Second, 10*time.Millisecond, "the first send to be stored and its lease to expire", func() bool {
		cur := env.Document(t, d.Reference)
		return env.Sandbox.CountByReference(d.Reference) == 1 && cur.LeaseExpiresAt != nil && time.Now().After(cur.LeaseExpiresAt.Add(50*time.Millisecond))
	})
	if n, err := second.Round(context.Background()); err != nil || n != 1 {
		t.Fatalf("second worker claimed %d documents (%v), want the expired one", n, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d = env.Document(t, d.Reference)
	ops := operations(t, env, d.ID)
	if d.Status != fiscal.StatusAuthorized || env.Sandbox.CountByReference(d.Reference) != 1 {
		t.Fatalf("status %s with %d documents; want authorized and exactly 1", d.Status, env.Sandbox.CountByReference(d.Reference))
	}
	if count(ops, "lookup:one") != 1 || count(ops, "emit:authorized") != 1 {
		t.Fatalf("provider calls %v; want the first worker's send and the second's adopting look-up", ops)
	}
	if got := invoicertest.Metric(t, first.reg, "onceflow_invoicer_results_refused_total", nil); got != 1 {
		t.Fatalf("first worker had %v results refused, want 1", got)
	}
	if got := invoicertest.Metric(t, second.reg, "onceflow_invoicer_results_refused_total", nil); got != 0 {
		t.Fatalf("second worker had %v results refused, want 0", got)
	}
}

// waitFor polls cond until it holds, failing after 30 s.

func TestWorkerDeadDuringSendIsTreatedAsUnknown(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-crash", 100_00, false))
	// A worker claimed the document, marked the send and died before
	// saving anything; its lease has run out.
	ctx := context.Background()
	token := uuid.New()
	if _, err := env.Store.ClaimDue(ctx, token, 60*time.Second, 1); err != nil {
		t.Fatal(err)
	}
	marked, err := env.Store.MarkSending(ctx, token, 60*time.Second, []store.Claimed{{ID: d.ID, Status: d.Status}})
	if err != nil || len(marked) != 1 {
		t.Fatalf("mark sending: %v %v", marked, err)
	}
	if _, err := env.Pool.Exec(ctx, "UPDATE invoicer.fiscal_documents SET lease_expires_at = now() - interval '1 second' WHERE id = $1", d.ID); err != nil {
		t.Fatal(err)
	}
	cfg := fast(t)
	cfg.Settle = 2 * time.Second
	w := newWorker(t, env, cfg, 5*time.Second)

	if _, err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if got := env.Document(t, d.Reference); got.Status != fiscal.StatusUnknown || env.Sandbox.Stats().Emits != 0 {
		t.Fatalf("after the crash: %s with %d sends; want unknown, settling, nothing sent", got.Status, env.Sandbox.Stats().Emits)
	}
	d = until(t, env, w, d.Reference, settled)
	if d.Status != fiscal.StatusAuthorized || env.Sandbox.CountByReference(d.Reference) != 1 || env.Sandbox.Stats().Emits != 1 {
		t.Fatalf("status %s, %d documents after %d sends; want authorized, one document, one send", d.Status, env.Sandbox.CountByReference(d.Reference), env.Sandbox.Stats().Emits)
	}
}
