package apply_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// subscription records a customer and a recurring order of amount minor
// units in UYU.
func (e *env) subscription(merchantID string, amount int64) {
	e.t.Helper()
	c, err := e.store.InsertCustomer(e.t.Context(), store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "X1", LegalName: "Test Buyer"})
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.store.InsertOrder(e.t.Context(), store.Order{MerchantOrderID: merchantID, CustomerID: c.ID, AmountMinor: amount,
		Currency: "UYU", Lines: []byte("[]"), Recurring: true})
	if err != nil {
		e.t.Fatal(err)
	}
}

// receive records a receipt of a notification of payment id without
// applying it.
func (e *env) receive(id string) {
	e.t.Helper()
	e.sent++
	_, err := e.store.InsertReceipt(e.t.Context(), store.NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: string(webhook.KindPSP),
		DedupeKey: fmt.Sprintf("payment:%s:%d", id, e.sent), EventID: id, EventType: "payment", Body: []byte(`{}`)})
	if err != nil {
		e.t.Fatal(err)
	}
}

// drain runs e's worker until no receipt is pending.
func (e *env) drain() {
	e.t.Helper()
	testwait.Until(e.t, 20*time.Second, 5*time.Millisecond, "no receipt pending", func() bool {
		if _, err := e.worker.Round(e.t.Context()); err != nil {
			e.t.Fatal(err)
		}
		return e.scalar("SELECT count(*)::text FROM ingest.webhook_receipts WHERE status = 'pending'") == "0"
	})
}

// race runs one round of each worker at once, released together.
func race(t *testing.T, workers ...*apply.Worker) {
	t.Helper()
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(workers))
	for i, w := range workers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			_, errs[i] = w.Round(t.Context())
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// outcome is what the payments of one order came to: their invoice
// events, the order's open second_payment cases and the receipts of the
// payments by status.
type outcome struct {
	invoices, cases, done, rejected string
}

func (e *env) outcomeOf(order string, payments ...string) outcome {
	e.t.Helper()
	var o outcome
	o.invoices = e.scalar("SELECT count(*)::text FROM ingest.outbox WHERE event_key = ANY (SELECT 'payment:' || unnest($1::text[]) || ':paid')", payments)
	o.cases = e.scalar(`SELECT count(*)::text FROM ingest.cases WHERE kind = 'unmatched_payment' AND order_id = $1
		AND evidence->>'reason' = 'second_payment' AND closed_at IS NULL`, order)
	o.done = e.scalar("SELECT count(*)::text FROM ingest.webhook_receipts WHERE event_id = ANY ($1) AND status = 'done'", payments)
	o.rejected = e.scalar("SELECT count(*)::text FROM ingest.webhook_receipts WHERE event_id = ANY ($1) AND status = 'rejected'", payments)
	return o
}

// Two PAID payments of one order applied in one batch: the batch sees its
// own first payment, so the second opens a second_payment case naming the
// first instead of being invoiced too.
func TestSecondPaymentInTheSameBatchOpensCase(t *testing.T) {
	e := newEnv(t)
	e.order("o-batch", 5000)
	e.order("o-other", 5000)
	first, other, second := e.pay("o-batch", 50, "UYU"), e.pay("o-other", 50, "UYU"), e.pay("o-batch", 50, "UYU")
	e.receive(first)
	e.receive(other)
	e.receive(second)
	e.drain()
	if got, want := e.outcomeOf("o-other", other), (outcome{invoices: "1", cases: "0", done: "1", rejected: "0"}); got != want {
		t.Fatalf("another order's payment in that batch: %+v, want %+v", got, want)
	}
	if got, want := e.outcomeOf("o-batch", first, second), (outcome{invoices: "1", cases: "1", done: "1", rejected: "1"}); got != want {
		t.Fatalf("two payments of one order in one batch: %+v, want %+v", got, want)
	}
	c := e.openCase("unmatched_payment", "payment:"+second)
	if c.Evidence["first_payment_id"] != first {
		t.Fatalf("case evidence %v, want the second payment's case naming %s first", c.Evidence, first)
	}
	if got := e.scalar("SELECT count(*)::text FROM ingest.payments WHERE status = 'PAID'"); got != "2" {
		t.Fatalf("PAID payments = %s, want 2 (one per order)", got)
	}
}

// Two workers (two ingest replicas) each apply another PAID payment of
// the same order at once: the check and the write are one under the
// order's lock, so whichever comes second opens the case. Many rounds, so
// the two checks overlap in some of them.
func TestSecondPaymentOnAnotherWorkerAtOnceOpensCase(t *testing.T) {
	e := newEnv(t)
	a, b := e.newWorker(1), e.newWorker(1)
	for i := range 30 {
		order := fmt.Sprintf("o-race-%d", i)
		e.order(order, 5000)
		first, second := e.pay(order, 50, "UYU"), e.pay(order, 50, "UYU")
		e.receive(first)
		e.receive(second)
		race(t, a, b)
		e.drain()
		if got, want := e.outcomeOf(order, first, second), (outcome{invoices: "1", cases: "1", done: "1", rejected: "1"}); got != want {
			t.Fatalf("round %d: two payments of one order on two workers: %+v, want %+v", i, got, want)
		}
	}
	// Batches of several orders each, both payments of an order on either
	// worker or on both: each order still ends with one invoice and one case.
	a, b = e.newWorker(4), e.newWorker(4)
	for i := range 10 {
		payments := map[string][]string{}
		for j := range 4 {
			order := fmt.Sprintf("o-race-%d-%d", i, j)
			e.order(order, 5000)
			payments[order] = []string{e.pay(order, 50, "UYU"), e.pay(order, 50, "UYU")}
		}
		for k := range 2 {
			for j := range 4 {
				e.receive(payments[fmt.Sprintf("o-race-%d-%d", i, j)][k])
			}
		}
		race(t, a, b)
		e.drain()
		for order, ids := range payments {
			if got, want := e.outcomeOf(order, ids...), (outcome{invoices: "1", cases: "1", done: "1", rejected: "1"}); got != want {
				t.Fatalf("round %d: %s on two workers taking 4 receipts each: %+v, want %+v", i, order, got, want)
			}
		}
	}
}

// The same PAID payment delivered again, in one batch, on two workers at
// once or later alone, stays one invoice and opens no case.
func TestRedeliveredPaymentStaysOneInvoice(t *testing.T) {
	e := newEnv(t)
	e.order("o-again", 5000)
	id := e.pay("o-again", 50, "UYU")
	e.receive(id)
	e.receive(id)
	e.drain()
	e.receive(id)
	e.receive(id)
	race(t, e.newWorker(1), e.newWorker(1))
	e.drain()
	e.receive(id)
	e.drain()
	if got, want := e.outcomeOf("o-again", id), (outcome{invoices: "1", cases: "0", done: "5", rejected: "0"}); got != want {
		t.Fatalf("one payment delivered 5 times: %+v, want %+v", got, want)
	}
}

// A recurring order's executions are each a sale of their own: in one
// batch or on two workers at once, each is invoiced and none is a case.
func TestRecurringOrderExecutionsAreEachInvoiced(t *testing.T) {
	e := newEnv(t)
	e.subscription("o-monthly", 5000)
	var ids []string
	for range 2 {
		id := e.pay("o-monthly", 50, "UYU")
		e.receive(id)
		ids = append(ids, id)
	}
	e.drain()
	for range 10 {
		next := []string{e.pay("o-monthly", 50, "UYU"), e.pay("o-monthly", 50, "UYU")}
		e.receive(next[0])
		e.receive(next[1])
		race(t, e.newWorker(1), e.newWorker(1))
		e.drain()
		ids = append(ids, next...)
	}
	n := fmt.Sprint(len(ids))
	if got, want := e.outcomeOf("o-monthly", ids...), (outcome{invoices: n, cases: "0", done: n, rejected: "0"}); got != want {
		t.Fatalf("%s executions of a recurring order: %+v, want %+v", n, got, want)
	}
}

// Each claim's size is observed, an empty one too, so that the share of
// claims that found nothing is seen.
func TestEachClaimsSizeIsObserved(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		order := fmt.Sprintf("o-size-%d", i)
		e.order(order, 5000)
		e.receive(e.pay(order, 50, "UYU"))
	}
	for _, want := range []int{3, 0} {
		if n, err := e.worker.Round(t.Context()); err != nil || n != want {
			t.Fatalf("round claimed %d (%v), want %d", n, err, want)
		}
	}
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var h *dto.Histogram
	for _, f := range families {
		if f.GetName() == "onceflow_ingest_apply_claimed_receipts" {
			h = f.GetMetric()[0].GetHistogram()
		}
	}
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 3 || h.GetBucket()[0].GetUpperBound() != 0 || h.GetBucket()[0].GetCumulativeCount() != 1 {
		t.Errorf("claims histogram: %d claims, %v receipts, %d at most 0; want 2, 3, 1", h.GetSampleCount(), h.GetSampleSum(), h.GetBucket()[0].GetCumulativeCount())
	}
}
