package pspsim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/sandbox/pspsim"
)

func refundBody(paymentID, amount, currency, notifyURL string) string {
	m := map[string]any{"payment_id": paymentID, "notification_url": notifyURL, "description": "refund"}
	if amount != "" {
		m["amount"] = json.Number(amount)
	}
	if currency != "" {
		m["currency"] = currency
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestRefundLedger runs refunds against one 1220.00 payment in order: the
// refunded total may reach but never exceed the payment amount.
func TestRefundLedger(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{})
	paid := createPayment(t, e, "", "")
	steps := []struct {
		name             string
		amount, currency string
		status           int
		code             string // error code, or the refunded amount on success
	}{
		{name: "partial", amount: "1000.00", currency: "UYU", status: 200, code: "1000.00"},
		{name: "over the remainder", amount: "220.01", currency: "UYU", status: 400, code: "5007"},
		{name: "amount without currency", amount: "1.00", status: 400, code: "5001"},
		{name: "currency without amount", currency: "UYU", status: 400, code: "5001"},
		{name: "other currency", amount: "1.00", currency: "USD", status: 400, code: "5001"},
		{name: "negative", amount: "-1.00", currency: "UYU", status: 400, code: "5001"},
		{name: "the rest, implicitly", status: 200, code: "220.00"},
		{name: "nothing left", status: 400, code: "5007"},
		{name: "one cent more", amount: "0.01", currency: "UYU", status: 400, code: "5007"},
	}
	for _, st := range steps { // sequential: each step depends on the previous ones
		status, got := call(t, http.MethodPost, e.url+"/refunds", refundBody(paid, st.amount, st.currency, ""))
		if status != st.status {
			t.Fatalf("%s: %d %v, want %d", st.name, status, got, st.status)
		}
		if status == http.StatusOK && got["amount"] != json.Number(st.code) {
			t.Errorf("%s: amount %v, want %s", st.name, got["amount"], st.code)
		}
		if status != http.StatusOK && got["code"] != json.Number(st.code) {
			t.Errorf("%s: code %v, want %s", st.name, got["code"], st.code)
		}
	}
	if st := e.srv.Stats(); st.Refunds != 2 {
		t.Errorf("stats = %+v, want 2 refunds", st)
	}
}

func TestRefundRefused(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{})
	rejected := createPayment(t, e, "300", "")
	pending := createPayment(t, e, "100", "")
	tests := []struct {
		name, paymentID string
		status          int
		code            string
	}{
		{"rejected payment", rejected, 400, "5002"},
		{"pending payment", pending, 400, "5002"},
		{"unknown payment", "D-4-nope", 404, "4000"},
		{"no payment id", "", 400, "5001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, got := call(t, http.MethodPost, e.url+"/refunds", refundBody(tt.paymentID, "", "", ""))
			if status != tt.status || got["code"] != json.Number(tt.code) {
				t.Fatalf("got %d %v, want %d %s", status, got, tt.status, tt.code)
			}
		})
	}
}

func TestRefundObjectAndNotification(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	e := start(t, pspsim.Config{})
	paid := createPayment(t, e, "", "")

	status, raw := do(t, signed(t, http.MethodPost, e.url+"/refunds", refundBody(paid, "20.50", "UYU", rc.url)))
	if status != http.StatusOK {
		t.Fatalf("refund: %d %s", status, raw)
	}
	if !strings.Contains(string(raw), `"status_code":200,`) {
		t.Errorf("refund status_code must be a JSON integer: %s", raw)
	}
	created := decode(t, raw)
	id, _ := created["id"].(string)
	if !strings.HasPrefix(id, "REF") || strings.Trim(id[3:], "0123456789") != "" {
		t.Errorf("id = %q, want REF<digits>", id)
	}
	wantFields(t, created, map[string]any{
		"payment_id": paid, "amount": json.Number("20.50"), "currency": "UYU", "status": "SUCCESS",
		"status_detail": "The refund was paid.", "created_date": "2026-11-30T15:04:05.123+0000",
		"notification_url": rc.url, "description": "refund", "order_id": "order-1",
	})

	_, got := do(t, signed(t, http.MethodGet, e.url+"/refunds/"+id, ""))
	if !bytes.Equal(got, raw) {
		t.Errorf("GET refund = %s, want %s", got, raw)
	}

	n := rc.next(t)
	if err := dlocal.Verify(testSecret, testLogin, n.header.Get(dlocal.HeaderDate), n.body, n.header.Get(dlocal.HeaderAuthorization)); err != nil {
		t.Fatalf("refund notification signature: %v", err)
	}
	if !bytes.Equal(n.body, raw) {
		t.Errorf("refund notification = %s, want %s", n.body, raw)
	}

	status, sent := post(t, e.url+"/sandbox/refunds/"+id+"/notify?copies=2", "")
	if status != http.StatusOK || sent["sent"] != json.Number("2") {
		t.Fatalf("resend refund: %d %v", status, sent)
	}
	for range 2 {
		if n := rc.next(t); !bytes.Equal(n.body, raw) {
			t.Errorf("resent refund = %s, want %s", n.body, raw)
		}
	}
}
