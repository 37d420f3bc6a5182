package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/dlocal"
)

// refund creates a full refund of payment at the PSP sandbox, notifying
// ingest, and returns its id.
func (e *env) refund(paymentID string) string {
	e.t.Helper()
	code, body := e.post(e.psp+"/refunds", map[string]any{"payment_id": paymentID, "notification_url": e.ingest + "/webhooks/dlocal"},
		http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	if code != http.StatusOK {
		e.t.Fatalf("create refund: %d %s", code, body)
	}
	var r struct{ ID string }
	_ = json.Unmarshal([]byte(body), &r)
	return r.ID
}

// A refund notified before its payment waits (retrying with backoff) and
// yields its one credit-note event once the payment is recorded.
func TestRefundBeforeItsPaymentEndsInOneCreditNote(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-r1", 5000)
	pay := e.pay("o-r1", "50.00", true)
	ref := e.refund(pay)
	e.waitCount(1, "SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1 AND attempts >= 2 AND status = 'pending'", ref)
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 0 {
		t.Fatalf("events before the payment is known: %d", n)
	}
	body := []byte(`{"id":"` + pay + `","status":"PAID"}`)
	if code, got := e.deliver("dlocal", body, dlocalSigned(body, secret, time.Now())); code != http.StatusOK {
		t.Fatalf("payment notification: %d %s", code, got)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "refund:"+ref+":succeeded")
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pay+":paid")
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 2 {
		t.Fatalf("outbox rows = %d, want the invoice and the credit note", n)
	}
}

// A payment whose webhook never comes is found by the status poller and
// invoiced exactly once; the webhook arriving afterwards is a duplicate.
func TestLostWebhookThePollerInvoicesOnce(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	pay := e.pay("o-p1", "75.00", true)
	e.order("o-p1", 7500, pay)
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pay+":paid")
	e.waitCount(1, "SELECT count(*) FROM ingest.webhook_receipts WHERE source = 'poller' AND status = 'done'")
	body := []byte(`{"id":"` + pay + `","status":"PAID"}`)
	code, got := e.deliver("dlocal", body, dlocalSigned(body, secret, time.Now()))
	if code != http.StatusOK || !strings.Contains(got, "duplicate") {
		t.Fatalf("late webhook: %d %s, want 200 duplicate", code, got)
	}
	time.Sleep(600 * time.Millisecond) // several poll periods: a settled order is not polled again
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts"); n != 1 {
		t.Fatalf("receipts = %d, want 1", n)
	}
}

// A payment whose webhook never comes, for an order recorded without a PSP
// payment id, is found by searching the PSP by the order's reference: one
// invoice event, and the order shows it as its PSP payment.
func TestLostWebhookUnlinkedOrderFoundByReference(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	e.order("o-ref", 4200)
	pay := e.pay("o-ref", "42.00", true)
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pay+":paid")
	if v := e.orderView(e.orderID("o-ref")); v.PSPPaymentID != pay {
		t.Fatalf("order o-ref shows PSP payment %q, want %s", v.PSPPaymentID, pay)
	}
	// The payment is o-ref's: another order can neither be created with it
	// nor amended to it.
	var customer string
	if err := e.pool.QueryRow(t.Context(), "SELECT customer_id::text FROM ingest.orders WHERE merchant_order_id = 'o-ref'").Scan(&customer); err != nil {
		t.Fatal(err)
	}
	if code, body := e.apiPost("/v1/orders", map[string]any{"merchant_order_id": "o-new", "customer_id": customer,
		"amount_minor": 4200, "currency": "UYU", "psp_payment_id": pay}, ""); code != http.StatusConflict || !strings.Contains(body, "psp_payment_id") {
		t.Fatalf("POST an order with o-ref's payment: %d %s, want 409 naming psp_payment_id", code, body)
	}
	e.order("o-other", 4200)
	if code, body := e.patch(e.orderID("o-other"), map[string]any{"psp_payment_id": pay}, "k-other"); code != http.StatusConflict ||
		!strings.Contains(body, "psp_payment_id") {
		t.Fatalf("PATCH to o-ref's payment: %d %s, want 409 naming psp_payment_id", code, body)
	}
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}
}

// Issue 16's gap: a second payment on a paid order, whose notification the
// PSP lost, is found by the poller's search and ends in a second_payment
// case, not in silence (nor in a second invoice).
func TestSecondPaymentWithLostNotificationOpensCase(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	e.order("o-twice", 3000)
	first := e.pay("o-twice", "30.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", first)
	second := e.pay("o-twice", "30.00", true)
	c := e.openCase("payment:" + second)
	if c.Evidence["reason"] != "second_payment" || c.Evidence["first_payment_id"] != first {
		t.Fatalf("case %+v, want a second_payment case naming %s", c, first)
	}
	if evs := e.invoices(second); len(evs) != 0 {
		t.Fatalf("the second payment has invoice events %v", evs)
	}
}

// A refund whose notification never comes is found by the poller once the
// merchant registered it, and ends in one credit-note event.
func TestLostRefundNotificationThePollerCreditsOnce(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	e.order("o-p2", 6000)
	pay := e.pay("o-p2", "60.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pay+":paid")
	code, body := e.post(e.psp+"/refunds", map[string]any{"payment_id": pay, "amount": json.Number("20.00"), "currency": "UYU"},
		http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	if code != http.StatusOK {
		t.Fatalf("create refund: %d %s", code, body)
	}
	var r struct{ ID string }
	_ = json.Unmarshal([]byte(body), &r)
	watch := map[string]string{"psp_refund_id": r.ID, "psp_payment_id": pay}
	if code, got := e.apiPost("/v1/refunds", watch, ""); code != http.StatusCreated {
		t.Fatalf("register refund: %d %s", code, got)
	}
	if code, got := e.apiPost("/v1/refunds", watch, ""); code != http.StatusOK {
		t.Fatalf("register refund again: %d %s, want 200", code, got)
	}
	if code, got := e.apiPost("/v1/refunds", map[string]string{"psp_refund_id": r.ID}, ""); code != http.StatusUnprocessableEntity || !strings.Contains(got, "psp_payment_id") {
		t.Fatalf("register without payment: %d %s, want 422 naming psp_payment_id", code, got)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "refund:"+r.ID+":succeeded")
	time.Sleep(600 * time.Millisecond) // several poll periods: a settled refund is not polled again
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 2 {
		t.Fatalf("outbox rows = %d, want the invoice and one credit note", n)
	}
}

// A receipt the PSP keeps failing is parked after INGEST_APPLY_MAX_ATTEMPTS; an
// operator lists it and sends it back once the cause is fixed.
func TestParkedReceiptIsListedAndRetried(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_APPLY_MAX_ATTEMPTS", "2")
	body := []byte(`{"id":"D-4-missing","status":"PAID"}`)
	if code, got := e.deliver("dlocal", body, dlocalSigned(body, secret, time.Now())); code != http.StatusOK {
		t.Fatalf("deliver: %d %s", code, got)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.webhook_receipts WHERE status = 'parked' AND attempts = 2")

	admin := http.Header{"Authorization": {"Bearer " + adminToken}}
	if code, _ := e.get(e.admin+"/admin/receipts/parked", nil); code != http.StatusUnauthorized {
		t.Fatalf("admin without token: %d, want 401", code)
	}
	code, got := e.get(e.admin+"/admin/receipts/parked", admin)
	var list struct {
		Receipts []struct {
			ID        int64  `json:"id"`
			EventID   string `json:"event_id"`
			LastError string `json:"last_error"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal([]byte(got), &list); code != http.StatusOK || err != nil || len(list.Receipts) != 1 || list.Receipts[0].EventID != "D-4-missing" || list.Receipts[0].LastError == "" {
		t.Fatalf("parked list: %d %s", code, got)
	}
	id := list.Receipts[0].ID
	code, got = e.get(e.admin+"/admin/status", admin)
	if code != http.StatusOK || !strings.Contains(got, `"parked":1`) || !strings.Contains(got, `"pending":0`) {
		t.Fatalf("status: %d %s, want one parked and none pending", code, got)
	}
	// The parked receipt is a case's subject: a bare retry would leave the
	// case open with nobody recorded, so it is refused and names the case.
	c := e.openCase("receipt:" + itoa(id))
	if code, got := e.post(e.admin+"/admin/receipts/"+itoa(id)+"/retry", nil, admin); code != http.StatusConflict || !strings.Contains(got, "case_open") || !strings.Contains(got, c.ID) {
		t.Fatalf("retry of a receipt with an open case: %d %s, want 409 naming %s", code, got, c.ID)
	}
	if code, got := e.resolve(c.ID, op("replay", "PSP fixed")); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, got)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.webhook_receipts WHERE id = $1 AND status = 'parked' AND attempts = 2", id)
	// Without an open case the bare retry still works.
	if _, err := e.pool.Exec(t.Context(), "UPDATE ingest.cases SET closed_at = now(), closed_by = 'test', action = 'acknowledge', reason = 'test' WHERE closed_at IS NULL"); err != nil {
		t.Fatal(err)
	}
	if code, got := e.post(e.admin+"/admin/receipts/"+itoa(id)+"/retry", nil, admin); code != http.StatusOK {
		t.Fatalf("retry: %d %s", code, got)
	}
	if code, got := e.post(e.admin+"/admin/receipts/999999/retry", nil, admin); code != http.StatusNotFound || !strings.Contains(got, "not_retryable") {
		t.Fatalf("retry of an unknown receipt: %d %s", code, got)
	}
}

// pendingReceipts records dLocal receipts (kind by id: payment or refund)
// straight in the table, in one statement and with no wake-up, so the
// worker's next poll claims them together.
func (e *env) pendingReceipts(kinds map[string]string) {
	e.t.Helper()
	var ids, types []string
	for id, kind := range kinds {
		ids, types = append(ids, id), append(types, kind)
	}
	_, err := e.pool.Exec(e.t.Context(), `INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, event_id, event_type, body)
		SELECT 'dlocal', 'dlocal', 'psp', kind || ':' || id || CASE kind WHEN 'payment' THEN ':PAID' ELSE ':SUCCESS' END, id, kind, '{}'
		FROM unnest($1::text[], $2::text[]) AS r(id, kind)`, ids, types)
	if err != nil {
		e.t.Fatal(err)
	}
}

// Receipts claimed together are recorded in one transaction: their events
// carry the same transaction id.
func TestReceiptsClaimedTogetherShareOneCommit(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_APPLY_WORKERS", "1")
	e.order("o-t1", 1000)
	e.order("o-t2", 2000)
	e.order("o-t3", 3000)
	e.pendingReceipts(map[string]string{e.pay("o-t1", "10.00", true): "payment", e.pay("o-t2", "20.00", true): "payment", e.pay("o-t3", "30.00", true): "payment"})
	e.waitCount(3, "SELECT count(*) FROM ingest.webhook_receipts WHERE status = 'done'")
	if n := e.count("SELECT count(DISTINCT xmin::text) FROM ingest.outbox"); n != 1 {
		t.Fatalf("3 invoice events written by %d transactions, want 1", n)
	}
}

// A receipt refused inside the shared transaction fails alone: the others
// claimed with it are recorded. Ingest's record of the payment is made
// smaller than its refund, so the refund is refused under the payment's
// lock, in the transaction the batch shares.
func TestReceiptRefusedInASharedCommitFailsAlone(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_APPLY_WORKERS", "1")
	e.order("o-f1", 5000)
	pay := e.pay("o-f1", "50.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pay+":paid")
	code, body := e.post(e.psp+"/refunds", map[string]any{"payment_id": pay}, http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	if code != http.StatusOK {
		t.Fatalf("create refund: %d %s", code, body)
	}
	var r struct{ ID string }
	_ = json.Unmarshal([]byte(body), &r)
	if _, err := e.pool.Exec(t.Context(), "UPDATE ingest.payments SET amount_minor = 4000 WHERE id = $1", pay); err != nil {
		t.Fatal(err)
	}
	e.order("o-f2", 2000)
	e.order("o-f3", 3000)
	others := []string{e.pay("o-f2", "20.00", true), e.pay("o-f3", "30.00", true)}
	e.pendingReceipts(map[string]string{others[0]: "payment", r.ID: "refund", others[1]: "payment"})
	e.waitCount(1, "SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1 AND status = 'rejected'", r.ID)
	e.waitCount(2, "SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = ANY($1) AND status = 'done'", others)
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 3 {
		t.Fatalf("outbox rows = %d, want the three invoices and no credit note", n)
	}
}

// With a PSP slow enough that a claimed batch takes longer than the lease,
// each worker records what it fetched before half the lease has run, so two
// workers taking the batch over from each other still finish it, each
// payment invoiced once.
func TestSlowPSPBatchFinishesWithinItsLease(t *testing.T) {
	t.Parallel()
	e := startSlow(t, 150*time.Millisecond, "INGEST_APPLY_WORKERS", "2", "INGEST_APPLY_LEASE", "1s")
	kinds := map[string]string{}
	for i := range 10 {
		order := fmt.Sprintf("o-s%d", i)
		e.order(order, 1000)
		kinds[e.pay(order, "10.00", true)] = "payment"
	}
	e.pendingReceipts(kinds) // 10 fetches of 150 ms: 1.5 s for one worker against a 1 s lease
	e.waitCount(10, "SELECT count(*) FROM ingest.webhook_receipts WHERE status = 'done'")
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 10 {
		t.Fatalf("outbox rows = %d, want one invoice event per payment", n)
	}
}

// A recurring order (a subscription; dLocal charges each period as an
// ordinary payment of the same order) invoices every PAID payment of its
// amount as its own sale: two charges, two invoice events, no case; one
// whose notification was lost is found by the poller's search as well.
func TestRecurringOrderInvoicesEachCharge(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	auth := http.Header{"Authorization": {"Bearer " + token}}
	code, body := e.post(e.ingest+"/v1/customers", ana, auth)
	var c struct{ ID string }
	if err := json.Unmarshal([]byte(body), &c); code != http.StatusCreated || err != nil {
		t.Fatalf("create customer: %d %s", code, body)
	}
	code, body = e.post(e.ingest+"/v1/orders", map[string]any{"merchant_order_id": "o-sub", "customer_id": c.ID,
		"amount_minor": 1200, "currency": "UYU", "recurring": true}, auth)
	if code != http.StatusCreated || !strings.Contains(body, `"recurring":true`) {
		t.Fatalf("create recurring order: %d %s", code, body)
	}
	first := e.pay("o-sub", "12.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+first+":paid")
	second := e.pay("o-sub", "12.00", true) // next period's charge, its notification lost
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+second+":paid")
	if n := e.count("SELECT count(*) FROM ingest.cases"); n != 0 {
		t.Fatalf("cases = %d, want none: each charge of a subscription is a sale", n)
	}
}

// A dLocal subscription execution notified PENDING whose completion was
// never notified is re-fetched by the poller by its id (it is a known
// payment with no final state): one invoice event on the recurring order,
// no case.
func TestSubscriptionExecutionCompletedSilentlyThePollerInvoices(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	sub := e.subscribe("o-plan")
	ex := e.execute(sub, map[string]any{"status": "PENDING"})
	id := "SUB-" + sub + "-" + ex
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PENDING'", id)
	path := "/sandbox/subscriptions/" + sub + "/executions/" + ex + "/status"
	if code, body := e.post(e.psp+path, map[string]any{"status": "COMPLETED", "silent": true}, nil); code != http.StatusOK {
		t.Fatalf("complete silently: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+id+":paid")
	if n := e.count("SELECT count(*) FROM ingest.cases"); n != 0 {
		t.Fatalf("cases = %d, want none", n)
	}
}

// A subscription known from a notified execution: its next execution, a
// period later (past INGEST_POLL_GIVE_UP) with every notification of it
// lost, is found by the poller listing the subscription's executions, and
// invoiced once; polling the order again records nothing more.
func TestSubscriptionExecutionNeverNotifiedThePollerInvoicesOnce(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms", "INGEST_POLL_GIVE_UP", "2s",
		"INGEST_POLL_PAID_GIVE_UP", "1s", "INGEST_POLL_RECURRING_EVERY", "200ms")
	sub := e.subscribe("o-plan")
	first := "SUB-" + sub + "-" + e.execute(sub, nil)
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+first+":paid")
	e.waitCount(1, "SELECT count(*) FROM ingest.orders WHERE merchant_order_id = 'o-plan' AND created_at < now() - interval '2 seconds'")
	second := "SUB-" + sub + "-" + e.execute(sub, map[string]any{"silent": true})
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+second+":paid")
	polls := e.count("SELECT polls FROM ingest.orders WHERE merchant_order_id = 'o-plan'")
	// Claimed twice more: the round after the one that found it has run.
	e.waitCount(1, "SELECT count(*) FROM ingest.orders WHERE merchant_order_id = 'o-plan' AND polls >= $1", polls+2)
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1", second); n != 1 {
		t.Fatalf("receipts of the silent execution = %d, want the poller's one", n)
	}
	e.waitCount(0, "SELECT count(*) FROM ingest.webhook_receipts WHERE status <> 'done'")
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 2 {
		t.Fatalf("outbox rows = %d, want one invoice event per execution", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.payments WHERE id = ANY($1) AND status = 'PAID'", []string{first, second}); n != 2 {
		t.Fatalf("PAID executions = %d, want 2", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.cases"); n != 0 {
		t.Fatalf("cases = %d, want none", n)
	}
}

// A recurring order naming its dLocal plan: the first execution of the
// buyer's subscription, every notification of it lost and so no execution
// naming the subscription, is found by the poller among the plan's
// subscriptions by the order's reference and invoiced once; another
// order's subscription to the plan is left alone, and polling the order
// again records nothing more.
func TestSubscriptionFirstExecutionNeverNotifiedIsFoundByItsPlan(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_POLL_AFTER", "0s", "INGEST_POLL_EVERY", "200ms")
	plan := e.plan()
	code, body := e.post(e.ingest+"/v1/orders", map[string]any{"merchant_order_id": "o-named", "customer_id": e.customer(),
		"amount_minor": 49000, "currency": "UYU", "recurring": true, "psp_plan_id": plan}, http.Header{"Authorization": {"Bearer " + token}})
	if code != http.StatusCreated || !strings.Contains(body, `"psp_plan_id":"`+plan+`"`) {
		t.Fatalf("create recurring order naming plan %s: %d %s", plan, code, body)
	}
	other := e.subscribeTo(plan, "o-neighbour")
	otherID := "SUB-" + other + "-" + e.execute(other, map[string]any{"silent": true})
	sub := e.subscribeTo(plan, "o-named")
	id := "SUB-" + sub + "-" + e.execute(sub, map[string]any{"silent": true})
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+id+":paid")
	polls := e.count("SELECT polls FROM ingest.orders WHERE merchant_order_id = 'o-named'")
	e.waitCount(1, "SELECT count(*) FROM ingest.orders WHERE merchant_order_id = 'o-named' AND polls >= $1", polls+2)
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1", id); n != 1 {
		t.Fatalf("receipts of the silent first execution = %d, want the poller's one", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1", otherID); n != 0 {
		t.Fatalf("receipts of another order's execution = %d, want none", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want the one invoice event", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.cases"); n != 0 {
		t.Fatalf("cases = %d, want none", n)
	}
}

// subscribe creates a recurring order of 490.00 UYU for Ana and a monthly
// plan of that amount notifying ingest, subscribes the order to it at the
// PSP sandbox and returns the subscription id.
func (e *env) subscribe(order string) string {
	e.t.Helper()
	code, body := e.post(e.ingest+"/v1/orders", map[string]any{"merchant_order_id": order, "customer_id": e.customer(),
		"amount_minor": 49000, "currency": "UYU", "recurring": true}, http.Header{"Authorization": {"Bearer " + token}})
	if code != http.StatusCreated {
		e.t.Fatalf("create recurring order: %d %s", code, body)
	}
	return e.subscribeTo(e.plan(), order)
}

// customer creates Ana's fiscal profile and returns its id.
func (e *env) customer() string {
	e.t.Helper()
	code, body := e.post(e.ingest+"/v1/customers", ana, http.Header{"Authorization": {"Bearer " + token}})
	var c struct{ ID string }
	if err := json.Unmarshal([]byte(body), &c); code != http.StatusCreated || err != nil {
		e.t.Fatalf("create customer: %d %s", code, body)
	}
	return c.ID
}

// plan creates a monthly plan of 490.00 UYU notifying ingest at the PSP
// sandbox and returns its id.
func (e *env) plan() string {
	e.t.Helper()
	code, body := e.post(e.psp+"/v1/subscription/plan", map[string]any{"amount": json.Number("490.00"), "currency": "UYU",
		"frequency_type": "MONTHLY", "notification_url": e.ingest + "/webhooks/dlocal"}, http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	var plan struct{ ID json.Number }
	if err := json.Unmarshal([]byte(body), &plan); code != http.StatusOK || err != nil {
		e.t.Fatalf("create plan: %d %s", code, body)
	}
	return plan.ID.String()
}

// subscribeTo subscribes order to plan at the PSP sandbox and returns the
// subscription id.
func (e *env) subscribeTo(plan, order string) string {
	e.t.Helper()
	code, body := e.post(e.psp+"/sandbox/subscriptions", map[string]any{"plan_id": json.Number(plan), "external_id": order}, nil)
	var sub struct{ ID json.Number }
	if err := json.Unmarshal([]byte(body), &sub); code != http.StatusOK || err != nil {
		e.t.Fatalf("subscribe: %d %s", code, body)
	}
	return sub.ID.String()
}

// execute charges subscription sub's next period at the PSP sandbox with
// req (status, silent) and returns the execution id.
func (e *env) execute(sub string, req map[string]any) string {
	e.t.Helper()
	if req == nil {
		req = map[string]any{}
	}
	code, body := e.post(e.psp+"/sandbox/subscriptions/"+sub+"/execute", req, nil)
	var ex struct{ ID string }
	if err := json.Unmarshal([]byte(body), &ex); code != http.StatusOK || err != nil || ex.ID == "" {
		e.t.Fatalf("execute: %d %s", code, body)
	}
	return ex.ID
}
