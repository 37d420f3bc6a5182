package store_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// handoffReceipt is a webhook receipt of key whose body is long enough
// to be stored deflated.
func handoffReceipt(key string) store.NewReceipt {
	return store.NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: "psp", DedupeKey: key, EventID: key,
		EventType: "PAID", Body: []byte(`{"id":"` + key + `","status":"PAID","note":"` + strings.Repeat("x", 200) + `"}`)}
}

func TestAReceiptHandedOffIsInsertedClaimedAndTakenWithItsBody(t *testing.T) {
	pool := pgtest.NewPool(t, "ingest")
	st := store.New(pool)
	h := store.NewHandoff(time.Minute, 10)
	st.UseHandoff(h)
	r := handoffReceipt("handed")
	if ok, err := st.InsertReceipt(t.Context(), r); err != nil || !ok {
		t.Fatalf("insert: %v %v", ok, err)
	}
	var token string
	var leaseLeft float64
	if err := pool.QueryRow(t.Context(), `SELECT lease_token::text, extract(epoch FROM lease_expires_at - now())
		FROM ingest.webhook_receipts WHERE dedupe_key = 'handed'`).Scan(&token, &leaseLeft); err != nil {
		t.Fatal(err)
	}
	if token != h.Token().String() || leaseLeft < 30 || leaseLeft > 60 {
		t.Errorf("row leased to %s for %.0f s more, want the handoff's token %s for about a minute", token, leaseLeft, h.Token())
	}
	claimed, err := st.ClaimReceipts(t.Context(), h.Token(), time.Minute, 10)
	if err != nil || len(claimed) != 0 {
		t.Fatalf("a claim from the table took %d receipts (%v), want none while the handoff holds it", len(claimed), err)
	}
	got, _ := h.Take(10)
	if len(got) != 1 || got[0].ID == 0 || got[0].EventID != "handed" || !bytes.Equal(got[0].Body, r.Body) || got[0].ReceivedAt.IsZero() {
		t.Fatalf("taken %+v, want the receipt with its id, received time and body as received", got)
	}
	if more, _ := h.Take(10); len(more) != 0 {
		t.Errorf("a second take returned %d receipts", len(more))
	}
}

func TestAFullOrClosedHandoffLeavesReceiptsToTheTable(t *testing.T) {
	pool := pgtest.NewPool(t, "ingest")
	st := store.New(pool)
	h := store.NewHandoff(time.Minute, 1)
	st.UseHandoff(h)
	for _, key := range []string{"first", "over", "duplicate"} {
		if _, err := st.InsertReceipt(t.Context(), handoffReceipt(key)); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := st.InsertReceipt(t.Context(), handoffReceipt("duplicate")); err != nil || ok {
		t.Fatalf("a duplicate reported inserted=%v (%v)", ok, err)
	}
	if h.Len() != 1 {
		t.Fatalf("the handoff of one holds %d receipts", h.Len())
	}
	h.Close()
	taken, _ := h.Take(10)
	if _, err := st.InsertReceipt(t.Context(), handoffReceipt("closed")); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.ClaimReceipts(t.Context(), h.Token(), time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(eventIDs(taken), eventIDs(claimed)), "[first] [closed duplicate over]"; got != want {
		t.Errorf("handed off, then claimed from the table: %s, want %s", got, want)
	}
}

// eventIDs are the event ids of rs, sorted.
func eventIDs(rs []store.Receipt) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.EventID)
	}
	slices.Sort(ids)
	return ids
}

func TestAReceiptHandedOffAndNeverTakenIsClaimedOnceItsLeaseEnds(t *testing.T) {
	pool := pgtest.NewPool(t, "ingest")
	st := store.New(pool)
	st.UseHandoff(store.NewHandoff(50*time.Millisecond, 10)) // a process that dies holding it
	if _, err := st.InsertReceipt(t.Context(), handoffReceipt("orphan")); err != nil {
		t.Fatal(err)
	}
	var claimed []store.Receipt
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, "the receipt claimed from the table", func() bool {
		var err error
		claimed, err = st.ClaimReceipts(t.Context(), store.NewHandoff(time.Minute, 1).Token(), time.Minute, 10)
		return err == nil && len(claimed) == 1
	})
	if claimed[0].EventID != "orphan" {
		t.Errorf("claimed %q", claimed[0].EventID)
	}
}

func TestReleasingAHandoffLetsTheNextClaimTakeItsReceiptsAtOnce(t *testing.T) {
	pool := pgtest.NewPool(t, "ingest")
	st := store.New(pool)
	h := store.NewHandoff(time.Hour, 10)
	st.UseHandoff(h)
	for _, key := range []string{"left", "other"} {
		if _, err := st.InsertReceipt(t.Context(), handoffReceipt(key)); err != nil {
			t.Fatal(err)
		}
	}
	taken, _ := h.Take(1) // worked to the end: no longer pending
	if err := st.FinishReceipt(t.Context(), taken[0].ID, h.Token(), "done", nil); err != nil {
		t.Fatal(err)
	}
	if n, err := h.Stop(t.Context(), st.ReleaseHandoff); err != nil || n != 1 {
		t.Fatalf("released %d receipts (%v), want the 1 still pending", n, err)
	}
	claimed, err := st.ClaimReceipts(t.Context(), store.NewHandoff(time.Minute, 1).Token(), time.Minute, 10)
	if err != nil || len(claimed) != 1 || claimed[0].EventID == taken[0].EventID {
		t.Fatalf("claimed %v (%v), want the receipt left in the handoff", eventIDs(claimed), err)
	}
}
