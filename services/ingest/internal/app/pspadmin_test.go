package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/dlocal"
)

// The PSP audit's routes: the PSP's payments of a period, and the recovery
// of one the webhook never brought, applied as that webhook would have been
// (one invoice event; recovering again records nothing new).
func TestPSPAuditListsAndRecovers(t *testing.T) {
	t.Parallel()
	e := start(t) // the poller waits its default 10m: only the audit finds the payment
	admin := http.Header{"Authorization": {"Bearer " + adminToken}}
	e.order("o-audit", 1800)
	from := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	pay := e.pay("o-audit", "18.00", true)
	to := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)

	code, body := e.get(e.admin+"/admin/psp/payments?from="+url.QueryEscape(from)+"&to="+url.QueryEscape(to), admin)
	var list struct {
		Payments []struct {
			PSP, ID, Status, Currency, OrderID string
			AmountMinor                        int64 `json:"amount_minor"`
		}
	}
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil || len(list.Payments) != 1 {
		t.Fatalf("list: %d %s (%v)", code, body, err)
	}
	if p := list.Payments[0]; p.PSP != "dlocal" || p.ID != pay || p.Status != "PAID" || p.AmountMinor != 1800 || p.Currency != "UYU" {
		t.Fatalf("listed %+v, want %s PAID 1800 UYU at dlocal", p, pay)
	}
	if code, body := e.post(e.admin+"/admin/psp/dlocal/payments/"+pay+"/recover", nil, admin); code != http.StatusOK || !strings.Contains(body, `"recorded":true`) {
		t.Fatalf("recover: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+pay+":paid")
	if code, body := e.post(e.admin+"/admin/psp/dlocal/payments/"+pay+"/recover", nil, admin); code != http.StatusOK || !strings.Contains(body, `"recorded":false`) {
		t.Fatalf("second recover: %d %s, want recorded false", code, body)
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts WHERE source = 'audit'"); n != 1 {
		t.Fatalf("audit receipts = %d, want 1", n)
	}

	code, body = e.post(e.psp+"/refunds", map[string]any{"payment_id": pay}, // no notification_url: ingest never hears of it
		http.Header{dlocal.HeaderLogin: {login}, dlocal.HeaderTransKey: {transKey}})
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(body), &created); code != http.StatusOK || err != nil {
		t.Fatalf("create refund: %d %s", code, body)
	}
	ref := created.ID
	to = time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	code, body = e.get(e.admin+"/admin/psp/refunds?from="+url.QueryEscape(from)+"&to="+url.QueryEscape(to), admin)
	if code != http.StatusOK || !strings.Contains(body, `"id":"`+ref+`"`) || !strings.Contains(body, `"payment_id":"`+pay+`"`) {
		t.Fatalf("list refunds: %d %s, want refund %s of %s", code, body, ref, pay)
	}
	if code, body := e.post(e.admin+"/admin/psp/dlocal/refunds/"+ref+"/recover", nil, admin); code != http.StatusOK || !strings.Contains(body, `"recorded":true`) {
		t.Fatalf("recover refund: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "refund:"+ref+":succeeded")

	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/admin/psp/payments?from=yesterday&to=" + url.QueryEscape(to), http.StatusBadRequest, "from:"},
		{"/admin/psp/payments?from=" + url.QueryEscape(to) + "&to=" + url.QueryEscape(from), http.StatusBadRequest, "from before to"},
		{"/admin/psp/paypal/payments/x/recover", http.StatusNotFound, "unknown_psp"},
		{"/admin/psp/dlocal/payments/D-none/recover", http.StatusNotFound, "unknown_payment"},
	} {
		var code int
		var body string
		if strings.HasSuffix(tc.path, "/recover") {
			code, body = e.post(e.admin+tc.path, nil, admin)
		} else {
			code, body = e.get(e.admin+tc.path, admin)
		}
		if code != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d naming %q", tc.path, code, body, tc.status, tc.want)
		}
	}
}

// A subscription's first execution, every notification of it lost, is
// among the period's payments of the PSP audit's listing, under the
// payment id ingest records it by, and its recovery ends in one invoice
// event on the recurring order.
func TestPSPAuditListsAndRecoversASubscriptionExecution(t *testing.T) {
	t.Parallel()
	e := start(t) // the poller waits its default 10m, and could not know the subscription anyway
	admin := http.Header{"Authorization": {"Bearer " + adminToken}}
	from := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	sub := e.subscribe("o-audit-plan")
	id := "SUB-" + sub + "-" + e.execute(sub, map[string]any{"silent": true})
	to := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)

	code, body := e.get(e.admin+"/admin/psp/payments?from="+url.QueryEscape(from)+"&to="+url.QueryEscape(to), admin)
	var list struct {
		Payments []struct {
			PSP, ID, Status, Currency string
			OrderID                   string `json:"order_id"`
			AmountMinor               int64  `json:"amount_minor"`
		}
	}
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil || len(list.Payments) != 1 {
		t.Fatalf("list: %d %s (%v)", code, body, err)
	}
	if p := list.Payments[0]; p.PSP != "dlocal" || p.ID != id || p.Status != "PAID" || p.AmountMinor != 49000 || p.OrderID != "o-audit-plan" {
		t.Fatalf("listed %+v, want %s PAID 49000 of o-audit-plan at dlocal", p, id)
	}
	if code, body := e.post(e.admin+"/admin/psp/dlocal/payments/"+id+"/recover", nil, admin); code != http.StatusOK || !strings.Contains(body, `"recorded":true`) {
		t.Fatalf("recover: %d %s", code, body)
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_key = $1", "payment:"+id+":paid")
	if n := e.count("SELECT count(*) FROM ingest.cases"); n != 0 {
		t.Fatalf("cases = %d, want none", n)
	}
}
