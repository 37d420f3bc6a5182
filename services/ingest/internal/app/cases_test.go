package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/dlocal"
	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/outbox"
)

// apiCase is a case as GET /admin/cases shows it.
type apiCase struct {
	ID          string         `json:"id"`
	Kind        string         `json:"kind"`
	Subject     string         `json:"subject"`
	AmountMinor int64          `json:"amount_minor"`
	Currency    string         `json:"currency"`
	Evidence    map[string]any `json:"evidence"`
	Actions     []string       `json:"actions"`
	ClosedBy    string         `json:"closed_by"`
	Action      string         `json:"action"`
	Reason      string         `json:"reason"`
	PSPRefundID string         `json:"psp_refund_id"`
}

// openCase waits for the open case on subject and returns it.
func (e *env) openCase(subject string) apiCase {
	e.t.Helper()
	e.waitCount(1, "SELECT count(*) FROM ingest.cases WHERE subject = $1 AND closed_at IS NULL", subject)
	code, body := e.get(e.admin+"/admin/cases?status=open", http.Header{"Authorization": {"Bearer " + adminToken}})
	if code != http.StatusOK {
		e.t.Fatalf("list cases: %d %s", code, body)
	}
	var out struct{ Cases []apiCase }
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		e.t.Fatal(err)
	}
	for _, c := range out.Cases {
		if c.Subject == subject {
			return c
		}
	}
	e.t.Fatalf("no open case on %s in %s", subject, body)
	return apiCase{}
}

// resolve posts an operator's resolution of case id.
func (e *env) resolve(id string, body map[string]string) (int, string) {
	e.t.Helper()
	return e.post(e.admin+"/admin/cases/"+id+"/resolve", body, http.Header{"Authorization": {"Bearer " + adminToken}})
}

// patch sends PATCH /v1/orders/{id} with an Idempotency-Key unless key is
// empty.
func (e *env) patch(id string, body any, key string) (int, string) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPatch, e.ingest+"/v1/orders/"+id, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return e.do(req)
}

// invoices returns the invoice events of payment id, decoded.
func (e *env) invoices(id string) []*eventsv1.BillingEvent {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), "SELECT payload FROM ingest.outbox WHERE event_key LIKE $1", "payment:"+id+":%")
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []*eventsv1.BillingEvent
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			e.t.Fatal(err)
		}
		ev := &eventsv1.BillingEvent{}
		if err := eventsv1.Decode([]byte(outbox.Body(b)), ev); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func (e *env) orderID(merchantID string) string {
	e.t.Helper()
	var id string
	if err := e.pool.QueryRow(context.Background(), "SELECT id::text FROM ingest.orders WHERE merchant_order_id = $1", merchantID).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

func op(action, reason string) map[string]string {
	return map[string]string{"action": action, "actor": "ana.operator", "reason": reason}
}

// A mismatched payment: the operator amends the order (PATCH, with its
// rules) and reapplies; the payment is then invoiced exactly once.
func TestMismatchClosedByAmendAndReapply(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-amend", 1000)
	id := e.pay("o-amend", "20.00")
	c := e.openCase("payment:" + id)
	if c.Kind != "unmatched_payment" || c.Evidence["reason"] != "amount_mismatch" || c.AmountMinor != 2000 ||
		strings.Join(c.Actions, ",") != "reapply,accept_as_sale,refunded_at_psp" {
		t.Fatalf("case %+v", c)
	}
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 0 {
		t.Fatalf("outbox rows = %d before the operator acts, want 0", n)
	}
	order := e.orderID("o-amend")
	if code, body := e.patch(order, map[string]any{"amount_minor": 2000}, ""); code != http.StatusBadRequest || !strings.Contains(body, "Idempotency-Key") {
		t.Fatalf("PATCH without a key: %d %s, want 400 naming Idempotency-Key", code, body)
	}
	if code, body := e.patch("00000000-0000-0000-0000-000000000001", map[string]any{"amount_minor": 2000}, "k0"); code != http.StatusNotFound {
		t.Fatalf("PATCH of an unknown order: %d %s, want 404", code, body)
	}
	if code, body := e.patch(order, map[string]any{"amount_minor": -5}, "k1"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "amount_minor") {
		t.Fatalf("PATCH with a bad amount: %d %s, want 422 naming amount_minor", code, body)
	}
	if code, body := e.patch(order, map[string]any{"amount_minor": 2000, "psp_payment_id": id}, "k2"); code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, body)
	}
	if code, body := e.resolve(c.ID, op("reapply", "order amended to the amount charged")); code != http.StatusOK ||
		!strings.Contains(body, `"action":"reapply"`) {
		t.Fatalf("reapply: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", id)
	if evs := e.invoices(id); len(evs) != 1 || evs[0].AmountMinor != 2000 {
		t.Fatalf("invoice events %v, want one of 2000", evs)
	}
	if code, body := e.resolve(c.ID, op("reapply", "again")); code != http.StatusConflict {
		t.Fatalf("resolving twice: %d %s, want 409", code, body)
	}
	// The order now has a PAID payment: a change that contradicts it is refused.
	if code, body := e.patch(order, map[string]any{"amount_minor": 3000}, "k3"); code != http.StatusConflict {
		t.Fatalf("PATCH contradicting the paid payment: %d %s, want 409", code, body)
	}
}

// accept_as_sale invoices the PSP's amount at once; the resolve checks its
// input and the action's fit to the kind.
func TestMismatchAcceptedAsSale(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-accept", 1000)
	id := e.pay("o-accept", "25.00")
	c := e.openCase("payment:" + id)
	for _, tc := range []struct {
		body map[string]string
		code int
		want string
	}{
		{map[string]string{"action": "accept_as_sale", "reason": "x"}, http.StatusBadRequest, "actor"},
		{map[string]string{"action": "accept_as_sale", "actor": "ana"}, http.StatusBadRequest, "reason"},
		{op("refunded_at_psp", "refunded"), http.StatusBadRequest, "psp_refund_id"},
		{op("replay", "x"), http.StatusUnprocessableEntity, "replay"},
	} {
		if code, body := e.resolve(c.ID, tc.body); code != tc.code || !strings.Contains(body, tc.want) {
			t.Fatalf("resolve %v: %d %s, want %d naming %s", tc.body, code, body, tc.code, tc.want)
		}
	}
	code, body := e.resolve(c.ID, op("accept_as_sale", "customer confirmed the larger amount"))
	if code != http.StatusOK || !strings.Contains(body, `"closed_by":"ana.operator"`) {
		t.Fatalf("accept_as_sale: %d %s", code, body)
	}
	evs := e.invoices(id)
	if len(evs) != 1 || evs[0].AmountMinor != 2500 || evs[0].Currency != "UYU" || evs[0].EventKey != "payment:"+id+":paid" {
		t.Fatalf("invoice events %v, want one of the PSP's 2500 UYU", evs)
	}
	if n := e.count("SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID' AND amount_minor = 2500", id); n != 1 {
		t.Fatal("the accepted payment is not recorded PAID with the PSP's amount")
	}
	if code, body := e.resolve(c.ID, op("accept_as_sale", "again")); code != http.StatusConflict {
		t.Fatalf("resolving twice: %d %s, want 409", code, body)
	}
	if code, body := e.get(e.admin+"/admin/cases/"+c.ID, http.Header{"Authorization": {"Bearer " + adminToken}}); code != http.StatusOK ||
		!strings.Contains(body, `"action":"accept_as_sale"`) || !strings.Contains(body, `"actions":[]`) {
		t.Fatalf("GET closed case: %d %s", code, body)
	}
}

// A second payment on a paid order: invoiced as a separate sale under its
// own key, or recorded refunded at the PSP with the refund id.
func TestSecondPaymentSeparateSaleOrRefundedAtPSP(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-double", 5000)
	first := e.pay("o-double", "50.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", first)
	second := e.pay("o-double", "50.00")
	c := e.openCase("payment:" + second)
	if c.Evidence["reason"] != "second_payment" || strings.Join(c.Actions, ",") != "separate_sale,refunded_at_psp" {
		t.Fatalf("case %+v", c)
	}
	if code, body := e.resolve(c.ID, op("accept_as_sale", "x")); code != http.StatusUnprocessableEntity {
		t.Fatalf("accept_as_sale on a second payment: %d %s, want 422", code, body)
	}
	if code, body := e.resolve(c.ID, op("separate_sale", "two tickets bought")); code != http.StatusOK {
		t.Fatalf("separate_sale: %d %s", code, body)
	}
	if evs := e.invoices(second); len(evs) != 1 || evs[0].EventKey == "payment:"+first+":paid" {
		t.Fatalf("second payment's invoice events %v, want one under its own key", evs)
	}
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 2 {
		t.Fatalf("outbox rows = %d, want 2 (one per payment)", n)
	}

	third := e.pay("o-double", "50.00")
	c3 := e.openCase("payment:" + third)
	code, body := e.resolve(c3.ID, map[string]string{"action": "refunded_at_psp", "actor": "ana", "reason": "refunded", "psp_refund_id": "REF-9"})
	if code != http.StatusOK || !strings.Contains(body, `"psp_refund_id":"REF-9"`) {
		t.Fatalf("refunded_at_psp: %d %s", code, body)
	}
	if evs := e.invoices(third); len(evs) != 0 {
		t.Fatalf("a payment refunded at the PSP has invoice events %v", evs)
	}
}

// A payment whose order is unknown is retried, then parked as an
// unmatched_payment case; once the order is recorded, reapply invoices it.
// A parked refund is a parked_receipt case, closed by acknowledge.
func TestUnknownOrderReappliedAndParkedAcknowledged(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_APPLY_MAX_ATTEMPTS", "2")
	id := e.pay("o-later", "30.00")
	c := e.openCase("payment:" + id)
	if c.Evidence["reason"] != "unknown_order" || strings.Join(c.Actions, ",") != "reapply,refunded_at_psp" {
		t.Fatalf("case %+v", c)
	}
	e.order("o-later", 3000)
	if code, body := e.resolve(c.ID, op("reapply", "order recorded late")); code != http.StatusOK {
		t.Fatalf("reapply: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+id+":paid")

	// A refund of a payment ingest never heard of waits, then is parked.
	silent := e.pay("o-silent", "10.00", true)
	code, body := e.post(e.psp+"/refunds", map[string]any{"payment_id": silent, "notification_url": e.ingest + "/webhooks/dlocal"},
		http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	if code != http.StatusOK {
		t.Fatalf("refund: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.cases WHERE kind = 'parked_receipt' AND closed_at IS NULL")
	var pid int64
	if err := e.pool.QueryRow(context.Background(), "SELECT id FROM ingest.cases WHERE kind = 'parked_receipt'").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if code, body := e.resolve("ingest-"+itoa(pid), op("acknowledge", "test refund of nothing")); code != http.StatusOK {
		t.Fatalf("acknowledge: %d %s", code, body)
	}
}

// A refund parked because its payment was unknown: once the payment is
// recorded, replay applies it and asks for its credit note.
func TestParkedRefundReplayed(t *testing.T) {
	t.Parallel()
	e := start(t, "INGEST_APPLY_MAX_ATTEMPTS", "2")
	e.order("o-replay", 1000)
	paid := e.pay("o-replay", "10.00", true)
	code, body := e.post(e.psp+"/refunds", map[string]any{"payment_id": paid, "notification_url": e.ingest + "/webhooks/dlocal"},
		http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	if code != http.StatusOK {
		t.Fatalf("refund: %d %s", code, body)
	}
	var refund struct{ ID string }
	_ = json.Unmarshal([]byte(body), &refund)
	e.waitCount(1, "SELECT count(*) FROM ingest.cases WHERE kind = 'parked_receipt' AND psp_refund_id = $1 AND closed_at IS NULL", refund.ID)
	var id int64
	if err := e.pool.QueryRow(context.Background(), "SELECT id FROM ingest.cases WHERE kind = 'parked_receipt'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	// The payment's notification arrives at last.
	note := []byte(`{"id":"` + paid + `","status":"PAID","amount":10.00,"currency":"UYU","order_id":"o-replay"}`)
	req, _ := http.NewRequest(http.MethodPost, e.ingest+"/webhooks/dlocal", bytes.NewReader(note))
	date := dlocal.FormatDate(time.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dlocal.HeaderDate, date)
	req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(secret, login, date, note)))
	if code, body := e.do(req); code != http.StatusOK {
		t.Fatalf("payment notification: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", paid)
	if code, body := e.resolve("ingest-"+itoa(id), op("replay", "payment recorded")); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "refund:"+refund.ID+":succeeded")
	if n := e.count("SELECT count(*) FROM ingest.cases WHERE closed_at IS NULL"); n != 0 {
		t.Fatalf("open cases after the replay = %d, want 0", n)
	}
}

// Issue 17: a chargeback at the PSP is never ignored. Notified after the
// payment was invoiced, it moves the payment to CHARGEBACK, opens a
// chargeback case saying an invoice exists, and emits nothing more; the
// case closes only by acknowledge.
func TestChargebackOpensCase(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-cb", 2500)
	pay := e.pay("o-cb", "25.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", pay)
	code, body := e.post(e.psp+"/sandbox/payments/"+pay+"/chargeback", nil, nil)
	if code != http.StatusOK {
		t.Fatalf("chargeback at the sandbox: %d %s", code, body)
	}
	c := e.openCase("payment:" + pay)
	if c.Kind != "chargeback" || c.Evidence["invoiced"] != true || c.Evidence["recorded_status"] != "PAID" ||
		c.AmountMinor != 2500 || strings.Join(c.Actions, ",") != "acknowledge" {
		t.Fatalf("case %+v, want a chargeback case of 2500 on an invoiced payment", c)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'CHARGEBACK'", pay)
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1 (the invoice only)", n)
	}
	if code, body := e.resolve(c.ID, op("reapply", "x")); code != http.StatusUnprocessableEntity {
		t.Fatalf("reapply on a chargeback: %d %s, want 422", code, body)
	}
	if code, body := e.resolve(c.ID, op("acknowledge", "dispute lost, credit note issued by hand")); code != http.StatusOK {
		t.Fatalf("acknowledge: %d %s", code, body)
	}
}

// A source configured with chargeback: credit_note credits an invoiced
// payment's chargeback automatically: one credit-note event for what the
// payment's refunds left, recorded as the refund chargeback-<id> (so the
// reconciler's sweep watches its document), and no case.
func TestChargebackCreditedAutomatically(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sources.yaml")
	file := "sources:\n  - {name: dlocal, kind: psp, psp: dlocal, login: env:DLOCAL_LOGIN, secrets: [env:DLOCAL_SECRET_KEY], chargeback: credit_note}\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	e := start(t, "INGEST_WEBHOOK_SOURCES_FILE", path)
	e.order("o-cb-cn", 2500)
	pay := e.pay("o-cb-cn", "25.00")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", pay)
	code, body := e.post(e.psp+"/refunds", map[string]any{"payment_id": pay, "amount": 10, "currency": "UYU",
		"notification_url": e.ingest + "/webhooks/dlocal"}, http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	if code != http.StatusOK {
		t.Fatalf("refund: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.refunds WHERE payment_id = $1 AND status = 'SUCCESS'", pay)
	if code, body := e.post(e.psp+"/sandbox/payments/"+pay+"/chargeback", nil, nil); code != http.StatusOK {
		t.Fatalf("chargeback at the sandbox: %d %s", code, body)
	}
	key := "refund:chargeback-" + pay + ":succeeded"
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", key)
	if n := e.count("SELECT count(*) FROM ingest.refunds WHERE id = $1 AND amount_minor = 1500 AND status = 'SUCCESS'", "chargeback-"+pay); n != 1 {
		t.Fatal("no chargeback refund of the 1500 the refund left")
	}
	if n := e.count("SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'CHARGEBACK'", pay); n != 1 {
		t.Fatal("the payment did not move to CHARGEBACK")
	}
	if n := e.count("SELECT count(*) FROM ingest.cases"); n != 0 {
		t.Fatalf("cases = %d, want none: the chargeback was credited", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 3 {
		t.Fatalf("outbox rows = %d, want 3 (invoice, refund's credit note, chargeback's credit note)", n)
	}
}
