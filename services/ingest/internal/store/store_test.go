package store_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

func newStore(tb testing.TB) *store.Store {
	tb.Helper()
	return store.New(pgtest.NewPool(tb, "ingest"))
}

// insertOrders records a customer and, for each of orders (a merchant
// order id and what else the test sets), an order of it for UYU 100, and
// returns them as stored.
func insertOrders(tb testing.TB, st *store.Store, orders ...store.Order) []store.Order {
	tb.Helper()
	c, err := st.InsertCustomer(tb.Context(), store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "ABC", LegalName: "x"})
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]store.Order, len(orders))
	for i, o := range orders {
		o.CustomerID, o.AmountMinor, o.Currency, o.Lines = c.ID, 100, "UYU", []byte("[]")
		if out[i], err = st.InsertOrder(tb.Context(), o); err != nil {
			tb.Fatalf("insert order %s: %v", o.MerchantOrderID, err)
		}
	}
	return out
}

// payOrders records a PAID payment "P-<merchant order id>" of each order.
func payOrders(tb testing.TB, st *store.Store, orders ...store.Order) {
	tb.Helper()
	pays := make([]store.Payment, len(orders))
	for i, o := range orders {
		pays[i] = store.Payment{ID: "P-" + o.MerchantOrderID, OrderID: o.ID, Status: "PAID", StatusRank: 40, AmountMinor: 100, Currency: "UYU"}
	}
	if err := st.InTx(tb.Context(), func(tx *store.Tx) error { return tx.ApplyPayments(tb.Context(), pays) }); err != nil {
		tb.Fatal(err)
	}
}

// Driver errors reach the store's callers as kinds: a missing row is
// NotFound, a duplicate Conflict, a reference to a missing row Invalid.
func TestErrorsAreKinds(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	order := insertOrders(t, st, store.Order{MerchantOrderID: "m-1"})[0]
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
	orders := insertOrders(t, st, store.Order{MerchantOrderID: "m-rec", Recurring: true}, store.Order{MerchantOrderID: "m-plain"},
		store.Order{MerchantOrderID: "m-idle", Recurring: true})
	payOrders(t, st, orders[:2]...)
	now := time.Now()
	w := store.PollWindow{Now: now.Add(time.Minute), GiveUpBefore: now.Add(time.Minute), PaidGiveUpBefore: now.Add(time.Minute),
		RecurringPolledBefore: now.Add(time.Minute), RecurringGiveUpBefore: now.Add(-time.Hour), Max: 10}
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

// An order is first due its poll delay after its creation, then a period
// after each poll, doubled at each poll up to a cap, while it will still be
// within its give-up: a paid one's paid give-up, an unpaid one's longer
// give-up. An order taken past its give-up leaves the schedule without
// being returned.
func TestOrdersArePolledOnTheirScheduleUntilTheirGiveUp(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	st.SetPollAfter(10 * time.Minute)
	created := time.Now()
	orders := insertOrders(t, st, store.Order{MerchantOrderID: "m-paid"}, store.Order{MerchantOrderID: "m-unpaid"})
	payOrders(t, st, orders[0])
	inserted := time.Now() // every order was created and scheduled between created and inserted
	claim := func(at time.Time, giveUp, paidGiveUp time.Duration) []string {
		got, err := st.ClaimDueOrders(ctx, store.PollWindow{Now: at, Every: 5 * time.Minute, EveryMax: 15 * time.Minute,
			GiveUpBefore: at.Add(-giveUp), PaidGiveUpBefore: at.Add(-paidGiveUp), Max: 10})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(got))
		for i, o := range got {
			ids[i] = o.MerchantOrderID
		}
		slices.Sort(ids)
		return ids
	}
	for _, step := range []struct {
		name       string
		at         time.Time
		giveUp     time.Duration
		paidGiveUp time.Duration
		want       []string
	}{
		{"before the poll delay", created.Add(9 * time.Minute), 72 * time.Hour, time.Hour, nil},
		// The paid order is past its (short) paid give-up: it leaves unpolled.
		{"first poll", inserted.Add(10 * time.Minute), 72 * time.Hour, 5 * time.Minute, []string{"m-unpaid"}},
		{"within the first period (5m)", inserted.Add(12 * time.Minute), 72 * time.Hour, time.Hour, nil},
		{"second poll", inserted.Add(16 * time.Minute), 72 * time.Hour, time.Hour, []string{"m-unpaid"}},
		{"within the doubled period (10m)", inserted.Add(22 * time.Minute), 72 * time.Hour, time.Hour, nil},
		{"third poll", inserted.Add(27 * time.Minute), 72 * time.Hour, time.Hour, []string{"m-unpaid"}},
		// The period is capped at 15m (not 20m), and the give-up ends
		// before the next poll would come: a last poll.
		{"fourth poll", inserted.Add(43 * time.Minute), 50 * time.Minute, time.Hour, []string{"m-unpaid"}},
		{"off the schedule", inserted.Add(2 * time.Hour), 72 * time.Hour, time.Hour, nil},
	} {
		if got := claim(step.at, step.giveUp, step.paidGiveUp); !slices.Equal(got, step.want) {
			t.Fatalf("%s: claimed %v, want %v", step.name, got, step.want)
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
	plan := "4021"
	orders := insertOrders(t, st, store.Order{MerchantOrderID: "m-plan", PSPPlanID: &plan, Recurring: true},
		store.Order{MerchantOrderID: "m-idle", Recurring: true})
	if orders[0].PSPPlanID == nil || *orders[0].PSPPlanID != plan {
		t.Fatalf("inserted %+v, want plan %s", orders[0], plan)
	}
	now := time.Now()
	w := store.PollWindow{Now: now.Add(time.Minute), Every: time.Minute, GiveUpBefore: now.Add(-time.Hour), PaidGiveUpBefore: now.Add(-time.Hour),
		RecurringPolledBefore: now.Add(time.Minute), RecurringGiveUpBefore: now.Add(-time.Hour), Max: 10}
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
// order). An order created with no PSP payment reads back with the first
// one recorded for it, and is found by it; one created with a PSP payment
// keeps it.
func TestPaymentsAndLinksOfABatch(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	orders := insertOrders(t, st, store.Order{MerchantOrderID: "m-a"}, store.Order{MerchantOrderID: "m-b"})
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
	// A later payment of order a does not become its PSP payment: the first
	// recorded one is.
	if err := st.InTx(ctx, func(tx *store.Tx) error { return tx.ApplyPayments(ctx, []store.Payment{pay("P-a2", a, "PAID", 40)}) }); err != nil {
		t.Fatal(err)
	}
	listed, err := st.Orders(ctx, time.Time{}, uuid.Nil, 10)
	if err != nil || len(listed) != 2 {
		t.Fatalf("orders = %+v (%v), want a and b", listed, err)
	}
	for i, want := range map[uuid.UUID]string{a: "P-a", b: "P-b"} {
		o, err := st.Order(ctx, i)
		if err != nil || o.PSPPaymentID == nil || *o.PSPPaymentID != want {
			t.Errorf("order %s has PSP payment %v (%v), want its first recorded one, %s", i, o.PSPPaymentID, err, want)
		}
		if byPayment, _, err := st.OrderWithCustomerByPSPPaymentID(ctx, want); err != nil || byPayment.ID != i {
			t.Errorf("order of payment %s = %v (%v), want %s", want, byPayment.ID, err, i)
		}
	}
	for _, o := range listed {
		if o.PSPPaymentID == nil || (*o.PSPPaymentID != "P-a" && *o.PSPPaymentID != "P-b") {
			t.Errorf("listed order %s has PSP payment %v, want its first recorded one", o.MerchantOrderID, o.PSPPaymentID)
		}
	}
	// An order created with a PSP payment keeps it, whatever is recorded.
	named := insertOrders(t, st, store.Order{MerchantOrderID: "m-named", PSPPaymentID: new("P-named")})[0].ID
	if err := st.InTx(ctx, func(tx *store.Tx) error {
		return tx.ApplyPayments(ctx, []store.Payment{pay("P-other", named, "PENDING", 10)})
	}); err != nil {
		t.Fatal(err)
	}
	if o, err := st.Order(ctx, named); err != nil || o.PSPPaymentID == nil || *o.PSPPaymentID != "P-named" {
		t.Errorf("order created with P-named has %v (%v)", o.PSPPaymentID, err)
	}
}

// Customers and orders get time-ordered ids (UUIDv7): each new one sorts
// after the ones before it, so it lands at the right edge of the indexes
// on it.
func TestIDsAreTimeOrdered(t *testing.T) {
	st := newStore(t)
	orders := insertOrders(t, st, store.Order{MerchantOrderID: "m-1"}, store.Order{MerchantOrderID: "m-2"}, store.Order{MerchantOrderID: "m-3"})
	for i, o := range orders {
		if o.ID.Version() != 7 {
			t.Fatalf("order %s has a version %d id, want 7", o.MerchantOrderID, o.ID.Version())
		}
		if i > 0 && bytes.Compare(orders[i-1].ID[:], o.ID[:]) >= 0 {
			t.Fatalf("order ids %s then %s: want each after the one before", orders[i-1].ID, o.ID)
		}
	}
	c, err := st.Customer(t.Context(), orders[0].CustomerID)
	if err != nil || c.ID.Version() != 7 {
		t.Fatalf("customer %v (%v), want a version 7 id", c.ID, err)
	}
}
