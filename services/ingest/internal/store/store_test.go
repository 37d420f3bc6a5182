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

// A recurring order past the young orders' window is claimed for a poll,
// with every payment recorded for it, while a payment of it was recorded
// within the recurring give-up and it was not polled since the recurring
// period; an ordinary order and a recurring one never charged are not.
func TestRecurringOrdersPastTheWindowAreClaimedWhileCharged(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	c, err := st.InsertCustomer(ctx, store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "ABC", LegalName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var pays []store.Payment
	for _, o := range []store.Order{
		{MerchantOrderID: "m-rec", Recurring: true}, {MerchantOrderID: "m-plain"}, {MerchantOrderID: "m-idle", Recurring: true},
	} {
		o.CustomerID, o.AmountMinor, o.Currency, o.Lines = c.ID, 100, "UYU", []byte("[]")
		got, err := st.InsertOrder(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if o.MerchantOrderID != "m-idle" {
			pays = append(pays, store.Payment{ID: "P-" + o.MerchantOrderID, OrderID: got.ID, Status: "PAID", StatusRank: 40, AmountMinor: 100, Currency: "UYU"})
		}
	}
	if err := st.InTx(ctx, func(tx *store.Tx) error { return tx.ApplyPayments(ctx, pays) }); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	w := store.PollWindow{SettleBefore: now.Add(time.Minute), GiveUpBefore: now.Add(time.Minute), PaidGiveUpBefore: now.Add(time.Minute),
		PolledBefore: now.Add(time.Minute), RecurringPolledBefore: now.Add(time.Minute), RecurringGiveUpBefore: now.Add(-time.Hour), Max: 10}
	if young, err := st.ClaimDueOrders(ctx, w); err != nil || len(young) != 0 {
		t.Fatalf("young orders claimed = %+v (%v), want none: all are past the window", young, err)
	}
	got, err := st.ClaimDueRecurringOrders(ctx, w)
	if err != nil || len(got) != 1 || got[0].MerchantOrderID != "m-rec" || len(got[0].RecurringPayments) != 1 ||
		got[0].RecurringPayments[0] != "P-m-rec" || len(got[0].Unsettled) != 0 {
		t.Fatalf("recurring orders claimed = %+v (%v), want m-rec with its payment", got, err)
	}
	w.RecurringPolledBefore = now.Add(-time.Hour)
	if again, err := st.ClaimDueRecurringOrders(ctx, w); err != nil || len(again) != 0 {
		t.Fatalf("claimed again within the recurring period = %+v (%v), want none", again, err)
	}
	w.RecurringPolledBefore, w.RecurringGiveUpBefore = now.Add(time.Minute), now.Add(time.Minute)
	if stale, err := st.ClaimDueRecurringOrders(ctx, w); err != nil || len(stale) != 0 {
		t.Fatalf("claimed with no payment within the recurring give-up = %+v (%v), want none", stale, err)
	}
}

// An order is claimed until its own give-up: a paid one until the paid
// give-up, an unpaid one until the longer give-up, though the claim reads
// only the orders created after the earlier of the two.
func TestOrdersAreClaimedUntilTheirOwnGiveUp(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	c, err := st.InsertCustomer(ctx, store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "ABC", LegalName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var pays []store.Payment
	for _, id := range []string{"m-paid", "m-unpaid"} {
		o, err := st.InsertOrder(ctx, store.Order{MerchantOrderID: id, CustomerID: c.ID, AmountMinor: 100, Currency: "UYU", Lines: []byte("[]")})
		if err != nil {
			t.Fatal(err)
		}
		if id == "m-paid" {
			pays = append(pays, store.Payment{ID: "P-" + id, OrderID: o.ID, Status: "PAID", StatusRank: 40, AmountMinor: 100, Currency: "UYU"})
		}
	}
	if err := st.InTx(ctx, func(tx *store.Tx) error { return tx.ApplyPayments(ctx, pays) }); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tt := range []struct {
		name           string
		giveUp, paidUp time.Time
		want           string
	}{
		{"paid past its give-up", now.Add(-time.Hour), now.Add(time.Minute), "m-unpaid"},
		{"unpaid past its give-up", now.Add(time.Minute), now.Add(-time.Hour), "m-paid"},
	} {
		w := store.PollWindow{SettleBefore: now.Add(time.Minute), GiveUpBefore: tt.giveUp, PaidGiveUpBefore: tt.paidUp,
			PolledBefore: now.Add(time.Minute), Max: 10} // a claim's stamp is before PolledBefore: both stay due
		got, err := st.ClaimDueOrders(ctx, w)
		if err != nil || len(got) != 1 || got[0].MerchantOrderID != tt.want {
			t.Fatalf("%s: claimed %+v (%v), want %s only", tt.name, got, err, tt.want)
		}
	}
}

// A recurring order naming a PSP plan comes with its plan, young and past
// the young orders' window, where it is claimed though never charged while
// it was created within the recurring give-up (its first execution may be
// lost); an idle recurring order naming none is not.
func TestRecurringOrdersNamingAPlanAreClaimedWithIt(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	c, err := st.InsertCustomer(ctx, store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "ABC", LegalName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	plan := "4021"
	for _, o := range []store.Order{{MerchantOrderID: "m-plan", PSPPlanID: &plan}, {MerchantOrderID: "m-idle"}} {
		o.CustomerID, o.AmountMinor, o.Currency, o.Lines, o.Recurring = c.ID, 100, "UYU", []byte("[]"), true
		if got, err := st.InsertOrder(ctx, o); err != nil || (o.PSPPlanID != nil && (got.PSPPlanID == nil || *got.PSPPlanID != plan)) {
			t.Fatalf("insert %s = %+v (%v)", o.MerchantOrderID, got, err)
		}
	}
	now := time.Now()
	w := store.PollWindow{SettleBefore: now.Add(time.Minute), GiveUpBefore: now.Add(-time.Hour), PaidGiveUpBefore: now.Add(-time.Hour),
		PolledBefore: now.Add(time.Minute), RecurringPolledBefore: now.Add(time.Minute), RecurringGiveUpBefore: now.Add(-time.Hour), Max: 10}
	young, err := st.ClaimDueOrders(ctx, w)
	if err != nil || len(young) != 2 {
		t.Fatalf("young orders claimed = %+v (%v), want both", young, err)
	}
	for _, o := range young {
		if want := map[string]string{"m-plan": plan}[o.MerchantOrderID]; o.PSPPlanID != want {
			t.Fatalf("young order %s claimed with plan %q, want %q", o.MerchantOrderID, o.PSPPlanID, want)
		}
	}
	w.GiveUpBefore = now.Add(time.Minute)
	got, err := st.ClaimDueRecurringOrders(ctx, w)
	if err != nil || len(got) != 1 || got[0].MerchantOrderID != "m-plan" || got[0].PSPPlanID != plan || len(got[0].RecurringPayments) != 0 {
		t.Fatalf("recurring orders claimed = %+v (%v), want m-plan with its plan and no payment", got, err)
	}
	w.RecurringGiveUpBefore = now.Add(time.Minute)
	if stale, err := st.ClaimDueRecurringOrders(ctx, w); err != nil || len(stale) != 0 {
		t.Fatalf("claimed though created before the recurring give-up = %+v (%v), want none", stale, err)
	}
}

// A batch of payments moves each only forward, whether its ids are distinct
// (one statement) or one payment comes twice (one statement each, in
// order); of two links of one order in a batch the first wins, and a linked
// order keeps its payment.
func TestPaymentsAndLinksOfABatch(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	c, err := st.InsertCustomer(ctx, store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "ABC", LegalName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var orders []store.Order
	for _, m := range []string{"m-a", "m-b"} {
		o, err := st.InsertOrder(ctx, store.Order{MerchantOrderID: m, CustomerID: c.ID, AmountMinor: 100, Currency: "UYU", Lines: []byte("[]")})
		if err != nil {
			t.Fatal(err)
		}
		orders = append(orders, o)
	}
	a, b := orders[0].ID, orders[1].ID
	pay := func(id string, order uuid.UUID, status string, rank int32) store.Payment {
		return store.Payment{ID: id, OrderID: order, Status: status, StatusRank: rank, AmountMinor: 100, Currency: "UYU"}
	}
	batches := [][]store.Payment{
		{pay("P-a", a, "PENDING", 10), pay("P-b", b, "PAID", 40)},
		{pay("P-a", a, "PAID", 40), pay("P-a", a, "PENDING", 10)},
		{pay("P-b", b, "PENDING", 10)},
	}
	for i, batch := range batches {
		if err := st.InTx(ctx, func(tx *store.Tx) error { return tx.ApplyPayments(ctx, batch) }); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	for id, want := range map[string]string{"P-a": "PAID", "P-b": "PAID"} {
		if p, err := st.Payment(ctx, id); err != nil || p.Status != want {
			t.Errorf("payment %s = %+v (%v), want %s", id, p, err, want)
		}
	}
	links := [][]store.OrderLink{
		{{OrderID: a, PSPPaymentID: "P-a"}, {OrderID: a, PSPPaymentID: "P-a2"}, {OrderID: b, PSPPaymentID: "P-b"}},
		{{OrderID: a, PSPPaymentID: "P-a3"}},
	}
	for i, batch := range links {
		if err := st.InTx(ctx, func(tx *store.Tx) error { return tx.LinkOrders(ctx, batch) }); err != nil {
			t.Fatalf("links %d: %v", i, err)
		}
	}
	for order, want := range map[uuid.UUID]string{a: "P-a", b: "P-b"} {
		if o, err := st.Order(ctx, order); err != nil || o.PSPPaymentID == nil || *o.PSPPaymentID != want {
			t.Errorf("order %s linked to %v (%v), want %s", order, o.PSPPaymentID, err, want)
		}
	}
}
