package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// A batch of results is saved in one statement: each field as given, the
// database's clock for the times it reckons, and a result whose claim or
// status no longer holds refused alone.
func TestSaveResultsSavesEachAndRefusesTheFencedAlone(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	for i := range 4 {
		env.Record(t, invoicertest.Payment(fmt.Sprint("pay-save-", i), 100_00, false))
	}
	token := uuid.New()
	claim, err := env.Store.ClaimDue(ctx, token, time.Minute, 10)
	if err != nil || len(claim.Documents) != 4 {
		t.Fatalf("claimed %d documents (%v), want 4", len(claim.Documents), err)
	}
	docs := claim.Documents
	if _, err := env.Pool.Exec(ctx, `UPDATE invoicer.fiscal_documents SET status = 'needs_attention' WHERE id = $1`, docs[2].ID); err != nil {
		t.Fatal(err)
	}
	series, number, cae, expires, issued := "A", int64(7), "90110000001", day(2027, 1, 31), day(2026, 12, 1)
	lastError := "provider timed out"
	results := []store.Result{
		{ID: docs[0].ID, LeaseToken: token, ClaimedStatus: docs[0].Status, Status: fiscal.StatusAuthorized,
			ProviderSeries: &series, ProviderNumber: &number, ProviderCAE: &cae, ProviderCAEExpires: &expires, IssueDate: &issued},
		{ID: docs[1].ID, LeaseToken: token, ClaimedStatus: docs[1].Status, Status: fiscal.StatusUnknown,
			UnknownSinceNow: true, DueIn: 90 * time.Second, LastError: &lastError, Refused: true},
		{ID: docs[2].ID, LeaseToken: token, ClaimedStatus: docs[2].Status, Status: fiscal.StatusAuthorized},
		{ID: docs[3].ID, LeaseToken: uuid.New(), ClaimedStatus: docs[3].Status, Status: fiscal.StatusAuthorized},
	}
	var fenced []error
	if err := env.Store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		fenced, err = tx.SaveResults(ctx, results)
		return err
	}); err != nil {
		t.Fatalf("save: %v", err)
	}
	for i, want := range []error{nil, nil, store.ErrFenced, store.ErrFenced} {
		if !errors.Is(fenced[i], want) || (want == nil && fenced[i] != nil) {
			t.Errorf("result %d: %v, want %v", i, fenced[i], want)
		}
	}

	got := env.Document(t, docs[0].Reference)
	if got.Status != fiscal.StatusAuthorized || deref(got.ProviderSeries) != series || deref(got.ProviderNumber) != number ||
		deref(got.ProviderCAE) != cae || !sameDay(got.ProviderCAEExpires, expires) || !sameDay(got.IssueDate, issued) || got.LeaseToken != nil {
		t.Errorf("saved %s %s-%d CAE %s expiring %v issued %v, lease %v; want authorized %s-%d CAE %s expiring 2027-01-31 issued 2026-12-01, no lease",
			got.Status, deref(got.ProviderSeries), deref(got.ProviderNumber), deref(got.ProviderCAE), got.ProviderCAEExpires, got.IssueDate, got.LeaseToken,
			series, number, cae)
	}
	got = env.Document(t, docs[1].Reference)
	if got.Status != fiscal.StatusUnknown || got.UnknownSince == nil || got.Refusals != 1 || deref(got.LastError) != lastError {
		t.Errorf("saved %s unknown since %v, %d refusals, last error %q; want unknown since now, 1 refusal, %q",
			got.Status, got.UnknownSince, got.Refusals, deref(got.LastError), lastError)
	}
	if due := got.DueAt.Sub(*got.UnknownSince); due < 89*time.Second || due > 91*time.Second {
		t.Errorf("due %v after it became unknown, want 90s: both by the database's now()", due)
	}
	if got := env.Document(t, docs[2].Reference); got.Status != fiscal.StatusNeedsAttention || got.LeaseToken == nil {
		t.Errorf("the document whose status changed is %s (lease %v), want needs_attention, untouched", got.Status, got.LeaseToken)
	}
	if got := env.Document(t, docs[3].Reference); got.Status != fiscal.StatusPending || got.LeaseToken == nil {
		t.Errorf("the document saved under another token is %s (lease %v), want pending, untouched", got.Status, got.LeaseToken)
	}
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// sameDay reports whether t holds the calendar day of want.
func sameDay(t *time.Time, want time.Time) bool {
	return t != nil && t.Format(time.DateOnly) == want.Format(time.DateOnly)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// A batch of new documents is recorded in one statement: each gets its row
// and the reference it took, a collision with a recorded document takes the
// next reference, and an event recorded before, or twice in the batch, is a
// duplicate.
func TestRecordDocumentsTogether(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	params := func(id string) store.NewDocument { return paymentDocument(t, id) }
	before := env.Record(t, invoicertest.Payment("pay-old", 100_00, false))
	collides := params("pay-collides")
	collides.References[0] = before.Reference // held by another source: takes its second
	accepted := time.Date(2026, 12, 1, 10, 30, 0, 123456789, time.UTC)
	fresh := params("pay-fresh")
	fresh.AcceptedAt = &accepted
	docs := []store.NewDocument{fresh, collides, params("pay-old"), fresh}
	var got []store.Recorded
	if err := env.Store.InTx(ctx, func(tx *store.Tx) error {
		got = tx.RecordDocuments(ctx, docs)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got[0].Err != nil || got[0].Reference != fresh.References[0] || got[0].ID == 0 {
		t.Errorf("fresh: %+v, want recorded under its first reference %s", got[0], fresh.References[0])
	}
	if got[1].Err != nil || got[1].Reference != collides.References[1] {
		t.Errorf("colliding: %+v, want recorded under its second reference %s", got[1], collides.References[1])
	}
	for i, what := range map[int]string{2: "recorded before", 3: "twice in the batch"} {
		if !errors.Is(got[i].Err, store.ErrDuplicate) {
			t.Errorf("the event %s: %v, want a duplicate", what, got[i].Err)
		}
	}
	d := env.Document(t, fresh.References[0])
	if d.ID != got[0].ID || d.SourceRef != "pay-fresh" || d.AmountMinor != 100_00 {
		t.Errorf("stored %+v, want pay-fresh's document %d of 100.00", d, got[0].ID)
	}
	var at time.Time
	if err := env.Pool.QueryRow(ctx, `SELECT accepted_at FROM invoicer.fiscal_documents WHERE id = $1`, got[0].ID).Scan(&at); err != nil || !at.Equal(accepted.Truncate(time.Microsecond)) {
		t.Errorf("accepted at %v (%v), want %v", at, err, accepted.Truncate(time.Microsecond))
	}
}

// Outside a transaction a batch is recorded all or nothing: a bad document
// fails its whole statement, and a batch whose sources share a reference
// (one statement each) still takes the next reference and commits together.
func TestStoreRecordsABatchAllOrNothing(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	params := func(id string, amount int64) store.NewDocument {
		p := paymentDocument(t, id)
		p.AmountMinor = amount
		return p
	}
	good, bad := params("pay-good", 100_00), params("pay-bad", 0) // the table refuses an amount of 0
	for i, r := range env.Store.RecordDocuments(ctx, []store.NewDocument{good, bad}) {
		if r.Err == nil || errors.Is(r.Err, store.ErrDuplicate) {
			t.Errorf("document %d of a batch holding a bad one: %+v, want the statement's error", i, r)
		}
	}
	var n int
	if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM invoicer.fiscal_documents`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d documents recorded (%v), want none", n, err)
	}

	a, b := params("pay-a", 100_00), params("pay-b", 100_00)
	b.References[0] = a.References[0]
	got := env.Store.RecordDocuments(ctx, []store.NewDocument{a, b})
	if got[0].Err != nil || got[1].Err != nil || got[0].Reference != a.References[0] || got[1].Reference != b.References[1] {
		t.Fatalf("recorded %+v, want pay-a under its first reference and pay-b under its second", got)
	}
}

// An event another transaction records while a batch waits behind it fails
// the batch's statement with a unique violation (recorded sources are
// looked up, not left to ON CONFLICT), so nothing of the batch is recorded
// and each document has the error; recorded again (the consumer records
// each event alone), the event is a duplicate and the other new.
func TestABatchMeetingAnEventRecordedMeanwhileFailsThenIsADuplicate(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	params := func(id string) store.NewDocument { return paymentDocument(t, id) }
	racing, fresh := params("pay-racing"), params("pay-fresh-2")
	other, err := env.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := other.Exec(ctx, `INSERT INTO invoicer.fiscal_documents (source_kind, source_ref, kind, event_key, reference,
    cfe_type, amount_minor, currency, buyer, lines) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		racing.SourceKind, racing.SourceRef, string(racing.Kind), racing.EventKey, racing.References[0],
		int32(racing.CFEType), racing.AmountMinor, racing.Currency, racing.Buyer, racing.Lines); err != nil {
		t.Fatal(err)
	}
	recorded := make(chan []store.Recorded, 1)
	go func() { recorded <- env.Store.RecordDocuments(ctx, []store.NewDocument{fresh, racing}) }()
	pgtest.WaitBlocked(t, env.Pool, "DocumentRecordMany")
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, r := range <-recorded {
		if !errkind.Is(r.Err, errkind.Conflict) {
			t.Fatalf("document %d of the batch: %+v, want a conflict", i, r)
		}
	}
	if r := env.Store.RecordDocuments(ctx, []store.NewDocument{racing})[0]; !errors.Is(r.Err, store.ErrDuplicate) {
		t.Fatalf("the racing event alone: %+v, want a duplicate", r)
	}
	if r := env.Store.RecordDocuments(ctx, []store.NewDocument{fresh})[0]; r.Err != nil || r.ID == 0 {
		t.Fatalf("the fresh event alone: %+v, want recorded", r)
	}
}

// paymentDocument is the document the billing event of a 100.00 payment id
// asks for.
func paymentDocument(t *testing.T, id string) store.NewDocument {
	t.Helper()
	p, err := consumer.Params(invoicertest.Payment(id, 100_00, false))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
