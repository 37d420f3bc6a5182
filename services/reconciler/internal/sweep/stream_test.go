package sweep_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// createdAt stamps the document of source ref with when it was created.
func createdAt(tb testing.TB, db *reconcilertest.DB, ref string, at time.Time) {
	tb.Helper()
	db.Exec(tb, `UPDATE invoicer.fiscal_documents SET created_at = $2 WHERE source_ref = $1`, ref, at)
}

// A pass reads the documents created from just before its rows became
// final to a minute after: a valid one there answers its row, a rejected
// one does not make a row valid, and a document created outside is looked
// up by its source ref, so it is found all the same.
func TestStreamAnswersWhatWasCreatedOverThePassAndLooksUpTheRest(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i, id := range []string{"p-early", "p-soon", "p-rejected"} {
		db.Payment(t, id, old.Add(time.Duration(i)*time.Second))
		db.Outbox(t, reconcilertest.PaymentPaid(id))
		db.Invoice(t, id)
	}
	createdAt(t, db, "p-early", old.Add(-10*time.Minute)) // by the clock of an invoicer database 10 minutes behind
	createdAt(t, db, "p-soon", old.Add(2*time.Second))
	createdAt(t, db, "p-rejected", old.Add(3*time.Second))
	db.Exec(t, `UPDATE invoicer.fiscal_documents SET status = 'rejected' WHERE source_ref = 'p-rejected'`)
	s, _, reg := newSweeper(t, db, sweep.Config{})

	got, err := s.Run(context.Background(), store.New(db.Pool))
	if err != nil {
		t.Fatal(err)
	}
	if want := (sweep.Result{Checked: 3, Streamed: 1, Missing: 1, Republished: 1, Cases: 1}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	if due, want := db.Due(t), keys(reconcilertest.PaymentPaid("p-rejected")); !reflect.DeepEqual(due, want) {
		t.Errorf("ingest's outbox has %v due again, want %v", due, want)
	}
	assertCounter(t, reg, "onceflow_reconciler_sweep_streamed_valid_total", 1)
}

// The refunds' pass reads the invoices of its span too: where refunds are
// rare, it stops reading once that costs more than looking its refunds up.
func TestStreamGivesWayToLookUpsWhereItsRowsAreRare(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	db.Payment(t, "p1", old)
	db.Invoice(t, "p1")
	createdAt(t, db, "p1", old.Add(time.Second))
	db.Exec(t, `INSERT INTO invoicer.fiscal_documents
  (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer, status, created_at)
SELECT 'payment', 'other-' || g, 'invoice', 'payment:other-' || g || ':paid', (100 + g)::text, 101, 12200, 'UYU', '{}', 'authorized', $1
FROM generate_series(1, 12000) g`, old.Add(time.Second))
	db.Refund(t, "r1", "p1", old.Add(time.Second))
	db.Outbox(t, reconcilertest.RefundSucceeded("r1"))
	db.CreditNote(t, "r1", "p1") // after the 12,000 invoices, and within a minute of its refund
	createdAt(t, db, "r1", old.Add(2*time.Second))
	s, _, _ := newSweeper(t, db, sweep.Config{})

	got, err := s.Run(context.Background(), store.New(db.Pool))
	if err != nil {
		t.Fatal(err)
	}
	// p1's invoice comes from the stream; r1's credit note from a look-up,
	// the refunds' stream having stopped after 10,000 documents for one row.
	if want := (sweep.Result{Checked: 2, Streamed: 1}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	if due := db.Due(t); len(due) != 0 {
		t.Errorf("ingest's outbox has %v due again, want none", due)
	}
}

// FirstDocumentCreatedFrom finds where the documents created from a time
// begin, over ids with gaps (a sequence skips the values of rolled-back
// inserts), before the first and after the last.
func TestFirstDocumentCreatedFrom(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	inv := store.NewInvoicerReader(db.Pool)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	if got, err := inv.FirstDocumentCreatedFrom(ctx, base); err != nil || got != 1 {
		t.Fatalf("over no document: %d, %v; want 1", got, err)
	}
	// Documents 10, 20, …, 100, created a minute apart from base on.
	db.Exec(t, `INSERT INTO invoicer.fiscal_documents
  (id, source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer, status, created_at)
OVERRIDING SYSTEM VALUE
SELECT 10 * g, 'payment', 'p' || g, 'invoice', 'payment:p' || g || ':paid', g::text, 101, 12200, 'UYU', '{}', 'authorized',
       $1::timestamptz + (g - 1) * interval '1 minute'
FROM generate_series(1, 10) g`, base)
	for _, tc := range []struct {
		at   time.Time
		want int64
	}{
		{base.Add(-time.Hour), 10},
		{base, 10},
		{base.Add(time.Second), 11}, // 20 is the first, and every id from 11 on is 20 or later
		{base.Add(4 * time.Minute), 41},
		{base.Add(9 * time.Minute), 91},
		{base.Add(9*time.Minute + time.Second), 101},
	} {
		got, err := inv.FirstDocumentCreatedFrom(ctx, tc.at)
		if err != nil || got != tc.want {
			t.Errorf("from %v: %d, %v; want %d", tc.at.Sub(base), got, err, tc.want)
		}
	}
}
