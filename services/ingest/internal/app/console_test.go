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
	checkRevealRecorded(t, e, admin, customer)
	checkPSPFetches(t, e, admin, id)
}

// checkRevealRecorded requires the one reveal the test made (and no
// refused one) to be in ingest.reveals and GET /admin/reveals, naming
// ana, the customer and her reason, and none of the customer's data.
func checkRevealRecorded(t *testing.T, e *env, admin http.Header, customer string) {
	t.Helper()
	code, body := e.get(e.admin+"/admin/reveals", admin)
	var page struct {
		Reveals []struct{ Service, Subject, Actor, Reason string }
	}
	if err := json.Unmarshal([]byte(body), &page); code != http.StatusOK || err != nil || len(page.Reveals) != 1 {
		t.Fatalf("GET /admin/reveals: %d %s, want the one reveal", code, body)
	}
	if r := page.Reveals[0]; r.Service != "ingest" || r.Subject != "customer:"+customer || r.Actor != "ana" || r.Reason != "copy for the buyer" {
		t.Errorf("reveal recorded as %+v, want ana's reveal of customer %s with her reason", r, customer)
	}
	var row string
	if err := e.pool.QueryRow(t.Context(), "SELECT row_to_json(r)::text FROM ingest.reveals r").Scan(&row); err != nil {
		t.Fatal(err)
	}
	for _, pd := range []string{ana["legal_name"], ana["doc_number"], ana["email"]} {
		if strings.Contains(row, pd) {
			t.Errorf("the reveal's record holds personal data %q: %s", pd, row)
		}
	}
}

// checkPSPFetches requires the trace of payment id to show the apply
// worker's re-fetch of it from the PSP, found, with its latency.
func checkPSPFetches(t *testing.T, e *env, admin http.Header, id string) {
	t.Helper()
	code, body := e.get(e.admin+"/admin/trace?q="+url.QueryEscape(id), admin)
	var tr struct {
		Fetches []struct {
			PSP, Operation, Outcome string
			ObjectID                string `json:"object_id"`
			LatencyMS               *int64 `json:"latency_ms"`
		} `json:"psp_fetches"`
	}
	if err := json.Unmarshal([]byte(body), &tr); code != http.StatusOK || err != nil {
		t.Fatalf("trace %s: %d %s", id, code, body)
	}
	for _, f := range tr.Fetches {
		if f.PSP == "dlocal" && f.Operation == "payment" && f.ObjectID == id && f.Outcome == "found" && f.LatencyMS != nil {
			return
		}
	}
	t.Errorf("trace %s shows no re-fetch of the payment from the PSP: %+v", id, tr.Fetches)
}
