package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

func TestErrorsHaveKinds(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	d := env.Record(t, invoicertest.Payment("pay-store", 100_00, false))
	again, err := consumer.Params(invoicertest.Payment("pay-store", 100_00, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		err  error
		kind errkind.Kind
		is   error // the sentinel, when there is one
	}{
		{"missing document", second(env.Store.Document(ctx, d.ID+1000)), errkind.NotFound, nil},
		{"missing reference", second(env.Store.DocumentByReference(ctx, "999")), errkind.NotFound, nil},
		{"no invoice yet", second(env.Store.InvoiceOf(ctx, "pay-never")), errkind.NotFound, nil},
		{"redelivered event", env.Store.RecordDocuments(ctx, []store.NewDocument{again})[0].Err, errkind.Conflict, store.ErrDuplicate},
		{"resolution of a missing document", env.Store.InsertResolution(ctx, store.Resolution{DocumentID: d.ID + 1000,
			Action: "void", Actor: "t", Reason: "t", FromStatus: fiscal.StatusNeedsAttention, ToStatus: fiscal.StatusVoided}), errkind.Invalid, nil},
		{"result under another token", fencedSave(t, env.Store, d), errkind.Conflict, store.ErrFenced},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errkind.Is(tt.err, tt.kind) || (tt.is != nil && !errors.Is(tt.err, tt.is)) {
				t.Fatalf("err %v of kind %v, want %v (%v)", tt.err, errkind.Of(tt.err), tt.kind, tt.is)
			}
		})
	}
}

// fencedSave saves a result for d under a token that never claimed it.
func fencedSave(tb testing.TB, st *store.Store, d store.Document) error {
	tb.Helper()
	var fenced []error
	err := st.InTx(context.Background(), func(tx *store.Tx) error {
		var err error
		fenced, err = tx.SaveResults(context.Background(), []store.Result{{ID: d.ID, LeaseToken: uuid.New(),
			ClaimedStatus: d.Status, Status: fiscal.StatusUnknown}})
		return err
	})
	if err != nil {
		tb.Fatalf("save: %v", err)
	}
	return fenced[0]
}

func second[T any](_ T, err error) error { return err }

// Two sources whose first references collide, recorded in one batch: the
// second takes the next reference of its sequence, and a redelivery finds
// its document again.
func TestRecordTakesTheNextReferenceOnACollision(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	a, err := consumer.Params(invoicertest.Payment("pay-a", 100_00, false))
	if err != nil {
		t.Fatal(err)
	}
	b, err := consumer.Params(invoicertest.Payment("pay-b", 100_00, false))
	if err != nil {
		t.Fatal(err)
	}
	b.References[0] = a.References[0] // forced: pay-b's first reference is pay-a's
	var got []store.Recorded
	if err := env.Store.InTx(ctx, func(tx *store.Tx) error {
		got = tx.RecordDocuments(ctx, []store.NewDocument{a, b})
		return errors.Join(got[0].Err, got[1].Err)
	}); err != nil {
		t.Fatalf("record: %v", err)
	}
	if got[0].Reference != a.References[0] || got[1].Reference != fiscal.ReferenceAt("payment", "pay-b", fiscal.KindInvoice, 1) {
		t.Fatalf("references %s and %s, want pay-a's first and pay-b's second", got[0].Reference, got[1].Reference)
	}
	if again := env.Store.RecordDocuments(ctx, []store.NewDocument{b})[0]; !errors.Is(again.Err, store.ErrDuplicate) {
		t.Fatalf("redelivered pay-b: %+v, want ErrDuplicate", again)
	}
	b.References = a.References[:1] // every reference held by another source
	b.SourceRef = "pay-c"
	if rec := env.Store.RecordDocuments(ctx, []store.NewDocument{b})[0]; rec.Err == nil || errors.Is(rec.Err, store.ErrDuplicate) {
		t.Fatalf("a document with every reference held: %+v, want an error", rec)
	}
}
