package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Documents recorded together go to the handoff claimed, with what a
// claim would give the loop (the document as stored, the database's clock);
// a duplicate takes no place, a batch beyond the room left is recorded
// unclaimed, and a release lets another worker claim what is left at once.
func TestDocumentsRecordedTogetherAreHandedOffClaimed(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	h := store.NewHandoff(time.Hour, 2)
	env.Store.UseHandoff(h)
	first, second := paymentDocument(t, "pay-1"), paymentDocument(t, "pay-2")
	got := env.Store.RecordDocuments(t.Context(), []store.NewDocument{first, second, first})
	if got[0].Err != nil || got[1].Err != nil || !errors.Is(got[2].Err, store.ErrDuplicate) {
		t.Fatalf("recorded %+v, want two documents and a duplicate", got)
	}
	over := env.Store.RecordDocuments(t.Context(), []store.NewDocument{paymentDocument(t, "pay-3")})[0]
	if over.Err != nil || h.Len() != 2 {
		t.Fatalf("a third document: %v, the handoff holds %d, want it recorded and 2 held", over.Err, h.Len())
	}
	handed, _ := h.Take(1)
	d := handed[0]
	if d.Document.ID != got[0].ID || d.Document.LeaseToken == nil || *d.Document.LeaseToken != h.Token() ||
		d.Document.Attempts != 1 || d.DBNow.IsZero() || d.Recorded.IsZero() {
		t.Errorf("handed %+v, want document %d claimed under the handoff's token with one attempt and the clocks", d, got[0].ID)
	}
	claimed, err := env.Store.ClaimDue(t.Context(), store.NewHandoff(time.Minute, 1).Token(), time.Minute, 10)
	if err != nil || len(claimed.Documents) != 1 || claimed.Documents[0].ID != over.ID {
		t.Fatalf("another worker claimed %+v (%v), want only the document beyond the handoff's room", claimed.Documents, err)
	}
	if n, err := h.Stop(t.Context(), env.Store.ReleaseHandoff); err != nil || n != 2 {
		t.Fatalf("released %d (%v), want the 2 recorded into the handoff", n, err)
	}
	again, err := env.Store.ClaimDue(t.Context(), store.NewHandoff(time.Minute, 1).Token(), time.Minute, 10)
	if err != nil || len(again.Documents) != 2 {
		t.Errorf("after the release another worker claimed %d (%v), want 2", len(again.Documents), err)
	}
}
