package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

func newStore(tb testing.TB) *store.Store {
	tb.Helper()
	dsn := pgtest.NewDatabase(tb)
	if err := db.Migrate(context.Background(), dsn, "ingest"); err != nil {
		tb.Fatal(err)
	}
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return store.New(p)
}

// Driver errors reach the store's callers as kinds: a missing row is
// NotFound, a duplicate Conflict, a reference to a missing row Invalid.
func TestErrorsAreKinds(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	c, err := st.InsertCustomer(ctx, store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "ABC", LegalName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	order := store.Order{MerchantOrderID: "m-1", CustomerID: c.ID, AmountMinor: 100, Currency: "UYU", Lines: []byte("[]")}
	if _, err := st.InsertOrder(ctx, order); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  func() error
		want errkind.Kind
	}{
		{"missing customer", func() error { _, err := st.Customer(ctx, uuid.New()); return err }, errkind.NotFound},
		{"missing order", func() error { _, err := st.Order(ctx, uuid.New()); return err }, errkind.NotFound},
		{"missing payment", func() error { _, err := st.Payment(ctx, "nope"); return err }, errkind.NotFound},
		{"receipt not parked", func() error { _, err := st.RetryReceipt(ctx, 42); return err }, errkind.NotFound},
		{"missing idempotency key", func() error { _, err := st.Idempotent(ctx, "/v1/orders", "k"); return err }, errkind.NotFound},
		{"duplicate order", func() error { _, err := st.InsertOrder(ctx, order); return err }, errkind.Conflict},
		{"order of no customer", func() error {
			o := order
			o.MerchantOrderID, o.CustomerID = "m-2", uuid.New()
			_, err := st.InsertOrder(ctx, o)
			return err
		}, errkind.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); !errkind.Is(err, tc.want) {
				t.Fatalf("err = %v (kind %v), want kind %v", err, errkind.Of(err), tc.want)
			}
		})
	}
}

// A duplicate receipt is not an error: it inserts nothing. Finishing a
// receipt claimed under another token is a Conflict (the claim was lost).
func TestReceiptDuplicateAndLostClaim(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	r := store.NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: "psp", DedupeKey: "payment:p1:PAID", EventID: "p1", EventType: "payment", Body: []byte("{}")}
	for i, want := range []bool{true, false} {
		if inserted, err := st.InsertReceipt(ctx, r); err != nil || inserted != want {
			t.Fatalf("insert %d = %v, %v; want %v, nil", i, inserted, err, want)
		}
	}
	claimed, err := st.ClaimReceipts(ctx, uuid.New(), time.Minute, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %v, %v; want one receipt", claimed, err)
	}
	err = st.InTx(ctx, func(tx *store.Tx) error { return tx.FinishDone(ctx, []int64{claimed[0].ID}, uuid.New()) })
	if !errkind.Is(err, errkind.Conflict) {
		t.Fatalf("finish under another token = %v, want kind Conflict", err)
	}
}
