package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The console's endpoints: the trace finds one payment by each of its
// identifiers (and its refund's) and shows its receipts (never the body),
// payment, refund, order and outbox rows; the board counts the backlog; the reveal needs a reason and
// answers the customer's data, which no log line holds.
func TestConsoleEndpoints(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.order("o-trace", 122050)
	id := e.pay("o-trace", "1220.50")
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+id+":paid")
	admin := http.Header{"Authorization": {"Bearer " + adminToken}}

	var eventID, orderID string
	if err := e.pool.QueryRow(t.Context(), "SELECT event_id FROM ingest.webhook_receipts LIMIT 1").Scan(&eventID); err != nil {
		t.Fatal(err)
	}
	orderID = e.orderID("o-trace")
	type trace struct {
		Orders []struct {
			ID         string `json:"id"`
			CustomerID string `json:"customer_id"`
		}
		Payments []struct{ ID, Status string }
		Receipts []map[string]any
		Outbox   []struct {
			EventKey string `json:"event_key"`
		}
	}
	var customer string
	for _, q := range []string{id, "o-trace", orderID, eventID} {
		code, body := e.get(e.admin+"/admin/trace?q="+url.QueryEscape(q), admin)
		var tr trace
		if err := json.Unmarshal([]byte(body), &tr); code != http.StatusOK || err != nil {
			t.Fatalf("trace %q: %d %s", q, code, body)
		}
		if len(tr.Payments) != 1 || tr.Payments[0].ID != id || tr.Payments[0].Status != "PAID" || len(tr.Orders) != 1 ||
			len(tr.Receipts) != 1 || tr.Receipts[0]["signature"] != "verified" || len(tr.Outbox) != 1 || tr.Outbox[0].EventKey != "payment:"+id+":paid" {
			t.Errorf("trace %q: %s", q, body)
		}
		if _, hasBody := tr.Receipts[0]["body"]; hasBody || strings.Contains(body, "Ana Testlastname") {
			t.Errorf("trace %q shows a body or personal data: %s", q, body)
		}
		customer = tr.Orders[0].CustomerID
	}
	// A refund joins its payment's trace, and its own id finds both.
	ref := e.refund(id)
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "refund:"+ref+":succeeded")
	for _, q := range []string{ref, id} {
		code, body := e.get(e.admin+"/admin/trace?q="+url.QueryEscape(q), admin)
		var tr struct {
			Payments, Refunds, Receipts, Outbox []map[string]any
		}
		if err := json.Unmarshal([]byte(body), &tr); code != http.StatusOK || err != nil || len(tr.Payments) != 1 ||
			len(tr.Refunds) != 1 || tr.Refunds[0]["id"] != ref || len(tr.Receipts) != 2 || len(tr.Outbox) != 2 {
			t.Errorf("trace %q after the refund: %d %s", q, code, body)
		}
	}
	if code, body := e.get(e.admin+"/admin/trace?q=nothing", admin); code != http.StatusOK || !strings.Contains(body, `"payments":[]`) {
		t.Errorf("trace of nothing: %d %s", code, body)
	}
	if code, _ := e.get(e.admin+"/admin/trace?q=", admin); code != http.StatusBadRequest {
		t.Errorf("trace without q: %d, want 400", code)
	}

	code, body := e.get(e.admin+"/admin/board", admin)
	if code != http.StatusOK || !strings.Contains(body, `"receipts":{"pending":0,"parked":0}`) {
		t.Errorf("board: %d %s", code, body)
	}

	if code, body := e.post(e.admin+"/admin/customers/"+customer+"/reveal", map[string]string{"actor": "ana"}, admin); code != http.StatusBadRequest {
		t.Errorf("reveal without a reason: %d %s, want 400", code, body)
	}
	code, body = e.post(e.admin+"/admin/customers/"+customer+"/reveal", map[string]string{"actor": "ana", "reason": "copy for the buyer"}, admin)
	if code != http.StatusOK || !strings.Contains(body, ana["legal_name"]) {
		t.Errorf("reveal: %d %s", code, body)
	}
}
