package emit_test

import (
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// A document this process records goes to its emission loop in memory,
// claimed at its record: the round's claim from the table finds it held,
// takes it from the handoff instead and emits it under the handoff's token,
// with one attempt counted as a claim counts it.
func TestADocumentHandedOffIsEmittedWithoutAClaimFromTheTable(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	h := store.NewHandoff(time.Minute, 10)
	env.Store.UseHandoff(h)
	cfg := fast(t)
	cfg.Poll, cfg.Handoff = time.Hour, h
	w := newWorker(t, env, cfg, 5*time.Second)
	d := env.Record(t, invoicertest.Payment("handed", 12200, false))
	if d.LeaseToken == nil || *d.LeaseToken != h.Token() || d.Attempts != 1 {
		t.Fatalf("recorded with lease %v and %d attempts, want the handoff's token %s and 1", d.LeaseToken, d.Attempts, h.Token())
	}
	if other, err := env.Store.ClaimDue(t.Context(), store.NewHandoff(time.Minute, 1).Token(), time.Minute, 10); err != nil || len(other.Documents) != 0 {
		t.Fatalf("another worker claimed %d documents (%v), want none while the handoff holds it", len(other.Documents), err)
	}
	if n, err := w.Round(t.Context()); err != nil || n != 1 {
		t.Fatalf("the round took %d documents (%v), want 1", n, err)
	}
	got := env.Document(t, d.Reference)
	if got.Status != fiscal.StatusAuthorized && got.Status != fiscal.StatusPendingDGI || got.LeaseToken != nil {
		t.Errorf("document %s with lease %v after the round, want sent (authorized or pending_dgi) and its lease ended", got.Status, got.LeaseToken)
	}
	if ops := operations(t, env, d.ID); count(ops, "emit:authorized")+count(ops, "emit:pending_dgi") != 1 {
		t.Errorf("provider calls %v, want one send", ops)
	}
}
