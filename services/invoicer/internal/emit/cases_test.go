package emit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// openCase returns the open case of kind about d, failing the test when
// there is none.
func openCase(tb testing.TB, env *invoicertest.Env, kind string, d store.Document) store.Case {
	tb.Helper()
	c, err := env.Store.OpenCaseOf(context.Background(), kind, store.DocumentSubject(d.ID))
	if err != nil {
		tb.Fatalf("open %s case of document %d: %v", kind, d.ID, err)
	}
	return c
}

func TestRejectedDocumentOpensACase(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	inv := env.Record(t, invoicertest.Payment("pay-rej", 1_220_00, false))
	note := env.Record(t, invoicertest.Refund("ref-rej", "pay-rej", 1_000_00))
	env.Sandbox.SetRule(inv.Reference, fiscalsim.Rule{Reject: true})
	w := newWorker(t, env, fast(t), 5*time.Second)

	inv = until(t, env, w, inv.Reference, settled)
	if inv.Status != fiscal.StatusRejected {
		t.Fatalf("invoice %s, want rejected", inv.Status)
	}
	c := openCase(t, env, cases.DocumentRejected, inv)
	if deref(c.DocumentID) != inv.ID || deref(c.AmountMinor) != 1_220_00 || c.Currency != "UYU" || c.PSPPaymentID != "pay-rej" ||
		c.Evidence["provider_status"] == "" || c.Evidence["provider_status"] == nil {
		t.Fatalf("case %+v, want the document, its money, the payment and the provider's status", c)
	}
	// The credit note waits: a rejected invoice is no invoice.
	for range 5 {
		if _, err := w.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if note = env.Document(t, note.Reference); note.Status != fiscal.StatusPending || env.Sandbox.CountByReference(note.Reference) != 0 {
		t.Fatalf("credit note %s, sent %d times; want it pending, never sent", note.Status, env.Sandbox.CountByReference(note.Reference))
	}
}

// refusable records the invoice of a 500.00 payment with id and the fast
// settings, opening document_refused after the given refusals.
func refusable(t *testing.T, id string, after int) (*invoicertest.Env, store.Document, emit.Config) {
	t.Helper()
	env := invoicertest.New(t)
	cfg := fast(t)
	cfg.RefusedCaseAfter = after
	return env, env.Record(t, invoicertest.Payment(id, 500_00, false)), cfg
}

func TestSendRefusedNTimesOpensACase(t *testing.T) {
	t.Parallel()
	env, d, cfg := refusable(t, "pay-refused", 3)
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{Refuse: true})
	w := newWorker(t, env, cfg, 5*time.Second)

	d = until(t, env, w, d.Reference, func(d store.Document) bool { return d.Refusals >= 2 })
	if _, err := env.Store.OpenCaseOf(context.Background(), cases.DocumentRefused, store.DocumentSubject(d.ID)); !errkind.Is(err, errkind.NotFound) {
		t.Fatalf("after 2 refusals: %v, want no case yet", err)
	}
	d = until(t, env, w, d.Reference, func(d store.Document) bool { return d.Refusals >= 4 })
	c := openCase(t, env, cases.DocumentRefused, d)
	if d.Status != fiscal.StatusPending || deref(c.AmountMinor) != 500_00 || c.Evidence["refusals"] != float64(4) || !c.UpdatedAt.After(c.OpenedAt) {
		t.Fatalf("document %s, case %+v; want the document still retried and one case, seen again at the 4th refusal", d.Status, c)
	}
}

// A send that never came before the provider's judgement (our own rate
// limiter had no turn for it, no connection carried it, a 429) is retried
// like a refusal, but it neither counts towards INVOICER_REFUSED_CASE_AFTER
// nor ends the provider's run of refusals.
func TestUnavailableSendsAreNoRefusalsOfTheDocument(t *testing.T) {
	t.Parallel()
	env, d, cfg := refusable(t, "pay-unavailable", 2)
	var sends atomic.Int32
	w := hookedWorker(t, env, cfg, hooked{beforeEmit: func(string) error {
		switch n := sends.Add(1); {
		case n == 1:
			return fmt.Errorf("emit: %w: MsgCod 99: refused", fiscal.ErrRefused)
		case n <= 5:
			return fmt.Errorf("emit: %w: rate limit: %w", fiscal.ErrUnavailable, context.DeadlineExceeded)
		}
		return nil // the sixth send reaches the sandbox
	}})

	d = until(t, env, w, d.Reference, func(d store.Document) bool { return d.Attempts >= 5 })
	if d.Refusals != 1 || d.Status != fiscal.StatusPending {
		t.Fatalf("after one refusal and four unavailable sends: %s with %d refusals, want pending with 1", d.Status, d.Refusals)
	}
	if _, err := env.Store.OpenCaseOf(context.Background(), cases.DocumentRefused, store.DocumentSubject(d.ID)); !errkind.Is(err, errkind.NotFound) {
		t.Fatalf("after one refusal and four unavailable sends: %v, want no document_refused case", err)
	}
	if d = until(t, env, w, d.Reference, settled); d.Status != fiscal.StatusAuthorized || sends.Load() != 6 {
		t.Fatalf("document %s after %d sends, want authorized after 6", d.Status, sends.Load())
	}
}

// A look-up that fails gives no judgement of the document either: the run
// of refusals goes on across it, so a provider that refuses every send and
// often cannot be looked up still opens the case.
func TestFailedLookUpsKeepTheRunOfRefusals(t *testing.T) {
	t.Parallel()
	env, d, cfg := refusable(t, "pay-lookups-fail", 2)
	var lookups, sends atomic.Int32
	w := hookedWorker(t, env, cfg, hooked{
		lookupErr: func() error {
			if n := lookups.Add(1); n == 2 || n == 3 { // between the first send and the second
				return fmt.Errorf("lookup: %w", context.DeadlineExceeded)
			}
			return nil
		},
		beforeEmit: func(string) error {
			sends.Add(1)
			return fmt.Errorf("emit: %w: MsgCod 99: refused", fiscal.ErrRefused)
		},
	})

	d = until(t, env, w, d.Reference, func(d store.Document) bool { return d.Refusals >= 2 })
	if sends.Load() != 2 || lookups.Load() != 4 {
		t.Fatalf("2 refusals after %d sends and %d look-ups, want 2 and 4 (two failed between them)", sends.Load(), lookups.Load())
	}
	if c := openCase(t, env, cases.DocumentRefused, d); c.Evidence["refusals"] != float64(2) {
		t.Fatalf("case %+v, want it opened at the second refusal", c)
	}
}

func TestNeedsAttentionOpensACase(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	note := env.Record(t, invoicertest.Refund("ref-orphan-case", "pay-never", 100_00))
	cfg := fast(t)
	cfg.CreditNoteWait = 100 * time.Millisecond
	w := newWorker(t, env, cfg, 5*time.Second)

	note = until(t, env, w, note.Reference, settled)
	c := openCase(t, env, cases.NeedsAttention, note)
	if note.Status != fiscal.StatusNeedsAttention || c.PSPRefundID != "ref-orphan-case" || c.PSPPaymentID != "pay-never" {
		t.Fatalf("document %s, case %+v; want needs_attention with its case", note.Status, c)
	}
}
