package emit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/keyedjson"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

func TestPendingDGIIsPolledUntilAuthorized(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-dgi", 100_000_00, true))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{PendingPolls: 3})
	w := newWorker(t, env, fast(t), 5*time.Second)

	d = until(t, env, w, d.Reference, settled)
	ops := operations(t, env, d.ID)
	if d.Status != fiscal.StatusAuthorized || d.CFEType != fiscal.EFactura || env.Sandbox.CountByReference(d.Reference) != 1 {
		t.Fatalf("status %s type %d, %d documents; want an authorized e-Factura, exactly 1", d.Status, d.CFEType, env.Sandbox.CountByReference(d.Reference))
	}
	if count(ops, "emit:pending_dgi") != 1 || count(ops, "status:one") != 3 || d.DGIPolls != 3 {
		t.Fatalf("provider calls %v, dgi polls %d; want one send answered pending and 3 status checks", ops, d.DGIPolls)
	}
	if keys := env.Outbox(t); len(keys) != 1 || keys[0] != "document:"+d.Reference+":authorized" {
		t.Fatalf("outbox %v, want one authorized notification", keys)
	}
}

func TestSmallETicketIsIssuedAfter48Polls(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	small := env.Record(t, invoicertest.Payment("pay-small", 1_000_00, false))              // UYU 1,000: well under 5,000 UI
	large := env.Record(t, identified(invoicertest.Payment("pay-large", 40_000_00, false))) // UYU 40,000: over 5,000 UI at 6.4123
	factura := env.Record(t, invoicertest.Payment("pay-factura", 1_000_00, true))           // small, but an e-Factura
	env.Sandbox.SetRule(fiscalsim.AnyReference, fiscalsim.Rule{PendingPolls: -1})
	w := newWorker(t, env, fast(t), 5*time.Second)

	got := until(t, env, w, small.Reference, settled)
	if got.Status != fiscal.StatusIssued || got.DGIPolls != 48 {
		t.Fatalf("small e-Ticket %s after %d polls, want issued after 48", got.Status, got.DGIPolls)
	}
	if n := count(operations(t, env, got.ID), "status:one"); n != 47 {
		t.Fatalf("%d status checks, want 47 after the send's own pending answer", n)
	}
	for _, ref := range []string{large.Reference, factura.Reference} {
		d := until(t, env, w, ref, func(d store.Document) bool { return d.DGIPolls >= 52 })
		if d.Status != fiscal.StatusPendingDGI {
			t.Fatalf("document type %d of %d minor units is %s after %d polls, want still pending_dgi", d.CFEType, d.AmountMinor, d.Status, d.DGIPolls)
		}
	}
	if keys := env.Outbox(t); len(keys) != 1 || keys[0] != "document:"+small.Reference+":authorized" {
		t.Fatalf("outbox %v, want the issued e-Ticket announced once", keys)
	}
}

func TestCreditNoteWaitsForItsInvoice(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	inv := env.Record(t, invoicertest.Payment("pay-cn", 1_220_00, false))
	note := env.Record(t, invoicertest.Refund("ref-cn", "pay-cn", 1_000_00))
	over := env.Record(t, invoicertest.Refund("ref-cn-2", "pay-cn", 300_00)) // 1,000 + 300 > 1,220
	env.Sandbox.SetRule(inv.Reference, fiscalsim.Rule{PendingPolls: 3})
	w := newWorker(t, env, fast(t), 5*time.Second)

	note = until(t, env, w, note.Reference, settled)
	inv = env.Document(t, inv.Reference)
	if note.Status != fiscal.StatusAuthorized || inv.Status != fiscal.StatusAuthorized {
		t.Fatalf("credit note %s, invoice %s; want both authorized", note.Status, inv.Status)
	}
	docs := env.Sandbox.Documents()
	if len(docs) != 2 || docs[0].Reference != inv.Reference || docs[1].Reference != note.Reference {
		t.Fatalf("sandbox holds %+v; want the invoice, then the credit note", docs)
	}
	want := fiscalsim.DocumentRef{Type: 101, Series: *inv.ProviderSeries, Number: int(*inv.ProviderNumber), Date: inv.IssueDate.Format("2006-01-02"), Reason: "Refund"}
	if docs[1].Type != 102 || len(docs[1].RefersTo) != 1 || docs[1].RefersTo[0] != want {
		t.Fatalf("credit note type %d refers to %+v, want 102 referring to %+v", docs[1].Type, docs[1].RefersTo, want)
	}
	if note.Attempts < 2 || inv.DGIPolls == 0 || !strings.Contains(strings.Join(operations(t, env, note.ID), " "), "emit:authorized") {
		t.Fatalf("invoice polls %d, note claimed %d times with calls %v; want the note to wait, then be sent", inv.DGIPolls, note.Attempts, operations(t, env, note.ID))
	}
	over = until(t, env, w, over.Reference, settled)
	if over.Status != fiscal.StatusNeedsAttention || !strings.Contains(deref(over.AttentionReason), "more than invoice") {
		t.Fatalf("over-refund %s (%v), want needs_attention", over.Status, deref(over.AttentionReason))
	}
	if n := env.Sandbox.CountByReference(over.Reference); n != 0 {
		t.Fatalf("over-refund sent %d times, want never", n)
	}
}

func TestCreditNoteWaitIsBounded(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	note := env.Record(t, invoicertest.Refund("ref-orphan", "pay-never", 100_00))
	cfg := fast(t)
	cfg.CreditNoteWait = 200 * time.Millisecond
	w := newWorker(t, env, cfg, 5*time.Second)

	note = until(t, env, w, note.Reference, settled)
	if note.Status != fiscal.StatusNeedsAttention || !strings.Contains(deref(note.AttentionReason), "not recorded") {
		t.Fatalf("orphan credit note %s (%v), want needs_attention after the wait", note.Status, deref(note.AttentionReason))
	}
	if len(env.Sandbox.Documents()) != 0 {
		t.Fatal("an orphan credit note reached the provider")
	}
}

func TestBlindProviderAmbiguousSendNeedsAttention(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ok := env.Record(t, invoicertest.Payment("pay-blind-ok", 100_00, false))
	d := env.Record(t, invoicertest.Payment("pay-blind", 100_00, false))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{HangAfterCommit: 1})
	cfg := fast(t)
	cfg.Blind = true
	w := newWorker(t, env, cfg, 300*time.Millisecond)

	d = until(t, env, w, d.Reference, settled)
	ok = until(t, env, w, ok.Reference, settled)
	if d.Status != fiscal.StatusNeedsAttention || !strings.Contains(deref(d.AttentionReason), "neither be looked up") {
		t.Fatalf("status %s (%v), want needs_attention for an ambiguous blind send", d.Status, deref(d.AttentionReason))
	}
	if ok.Status != fiscal.StatusAuthorized {
		t.Fatalf("clean blind send %s, want authorized", ok.Status)
	}
	for range 3 {
		if _, err := w.Round(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n, st := env.Sandbox.CountByReference(d.Reference), env.Sandbox.Stats(); n != 1 || st.Queries != 0 || st.Emits != 2 {
		t.Fatalf("%d documents, stats %+v; want 1 document, 2 sends, no look-ups", n, st)
	}
}

func TestKeyedProviderResendsWithoutSettling(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-keyed", 100_00, false))
	lost := env.Record(t, invoicertest.Payment("pay-keyed-lost", 100_00, false))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{FailBefore: 1})
	env.Sandbox.SetRule(lost.Reference, fiscalsim.Rule{HangAfterCommit: 1})
	cfg := fast(t)
	cfg.Settle = time.Hour // an idempotent provider never waits for it
	reg := prometheus.NewRegistry()
	client, err := keyedjson.New(keyedjson.Config{BaseURL: env.KeyedURL, Token: invoicertest.AccessKey, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := worker{Emitter: emit.New(env.Store, client, zaptest.NewLogger(t), reg, cfg), reg: reg}

	for _, ref := range []string{d.Reference, lost.Reference} {
		got := until(t, env, w, ref, settled)
		if got.Status != fiscal.StatusAuthorized || env.Sandbox.CountByReference(ref) != 1 {
			t.Fatalf("status %s with %d documents; want authorized and exactly 1", got.Status, env.Sandbox.CountByReference(ref))
		}
	}
	if ops := operations(t, env, d.ID); count(ops, "emit:ambiguous") != 1 || count(ops, "emit:authorized") != 1 {
		t.Fatalf("after a 503: calls %v, want one resend at once", ops)
	}
	if ops := operations(t, env, lost.ID); count(ops, "emit:ambiguous") != 1 || count(ops, "lookup:one") != 1 {
		t.Fatalf("after a timeout: calls %v, want the stored document adopted", ops)
	}
}
