package pspsim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/sandbox/pspsim"
)

func TestCreateAndGetPayment(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{})
	tests := []struct {
		description, status, code string
	}{
		{"", "PAID", "200"},
		{"200", "PAID", "200"},
		{"300", "REJECTED", "300"},
		{"302", "REJECTED", "302"},
		{"100", "PENDING", "100"},
		{"monthly plan", "PAID", "200"},
	}
	for _, tt := range tests {
		t.Run("description="+tt.description, func(t *testing.T) {
			t.Parallel()
			status, created := call(t, http.MethodPost, e.url+"/payments", paymentBody(tt.description, ""))
			if status != http.StatusOK {
				t.Fatalf("create: %d %v", status, created)
			}
			wantFields(t, created, map[string]any{
				"amount": json.Number("1220.00"), "currency": "UYU", "country": "UY",
				"payment_method_id": "CARD", "payment_method_type": "CARD", "payment_method_flow": "DIRECT",
				"order_id": "order-1", "description": tt.description,
				"status": tt.status, "status_code": tt.code, // a JSON string
				"created_date": "2026-11-30T15:04:05.123+0000",
			})
			id, _ := created["id"].(string)
			if len(id) != len("D-4-")+36 || id[:4] != "D-4-" {
				t.Errorf("id = %q, want D-4-<uuid>", id)
			}
			status, got := call(t, http.MethodGet, e.url+"/payments/"+id, "")
			if status != http.StatusOK {
				t.Fatalf("get: %d %v", status, got)
			}
			wantFields(t, got, created)
		})
	}
}

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{})
	body := paymentBody("", "")
	tests := []struct {
		name     string
		mutate   func(*http.Request)
		status   int
		code     string
		param    string
		endpoint string
	}{
		{name: "missing X-Date", mutate: del(dlocal.HeaderDate), status: 400, code: "5001", param: "X-Date"},
		{name: "missing X-Login", mutate: del(dlocal.HeaderLogin), status: 400, code: "5001", param: "X-Login"},
		{name: "missing X-Trans-Key", mutate: del(dlocal.HeaderTransKey), status: 400, code: "5001", param: "X-Trans-Key"},
		{name: "missing Authorization", mutate: del(dlocal.HeaderAuthorization), status: 400, code: "5001", param: "Authorization"},
		{name: "wrong signature", mutate: set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign("other", testLogin, "x", nil))), status: 400, code: "5000"},
		{name: "wrong scheme", mutate: set(dlocal.HeaderAuthorization, "Bearer abc"), status: 400, code: "5000"},
		{name: "other X-Date than signed", mutate: set(dlocal.HeaderDate, "2020-01-01T00:00:00.000Z"), status: 400, code: "5000"},
		{name: "unknown login", mutate: set(dlocal.HeaderLogin, "intruder"), status: 403, code: "3001"},
		{name: "unknown trans key", mutate: set(dlocal.HeaderTransKey, "wrong"), status: 403, code: "3001"},
		{name: "unknown payment", endpoint: "/payments/D-4-nope", status: 404, code: "4000"},
		{name: "unknown refund", endpoint: "/refunds/REF1", status: 404, code: "4001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := signed(t, http.MethodPost, e.url+"/payments", body)
			if tt.endpoint != "" {
				req = signed(t, http.MethodGet, e.url+tt.endpoint, "")
			}
			if tt.mutate != nil {
				tt.mutate(req)
			}
			status, raw := do(t, req)
			got := decode(t, raw)
			if status != tt.status || got["code"] != json.Number(tt.code) {
				t.Fatalf("got %d %s, want %d code %s", status, raw, tt.status, tt.code)
			}
			if tt.param != "" && got["param"] != tt.param {
				t.Errorf("param = %v, want %s", got["param"], tt.param)
			}
		})
	}
	if st := e.srv.Stats(); st.Payments != 0 {
		t.Errorf("refused requests stored %d payments", st.Payments)
	}
}

func TestInvalidPaymentParams(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{})
	tests := []struct{ name, body, param string }{
		{"float noise", `{"amount":12.345,"currency":"UYU","country":"UY","payment_method_id":"CARD","order_id":"o"}`, "amount"},
		{"zero", `{"amount":0,"currency":"UYU","country":"UY","payment_method_id":"CARD","order_id":"o"}`, "amount"},
		{"exponent", `{"amount":1e3,"currency":"UYU","country":"UY","payment_method_id":"CARD","order_id":"o"}`, "amount"},
		{"currency", `{"amount":10,"currency":"uyu","country":"UY","payment_method_id":"CARD","order_id":"o"}`, "currency"},
		{"order id", `{"amount":10,"currency":"UYU","country":"UY","payment_method_id":"CARD"}`, "order_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, got := call(t, http.MethodPost, e.url+"/payments", tt.body)
			if status != http.StatusBadRequest || got["code"] != json.Number("5001") || got["param"] != tt.param {
				t.Fatalf("got %d %v, want 400 5001 %s", status, got, tt.param)
			}
		})
	}
}

func TestPaymentNotificationIsSigned(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	e := start(t, pspsim.Config{})
	id := createPayment(t, e, "", rc.url)

	n := rc.next(t)
	if err := dlocal.Verify(testSecret, testLogin, n.header.Get(dlocal.HeaderDate), n.body, n.header.Get(dlocal.HeaderAuthorization)); err != nil {
		t.Fatalf("notification signature: %v", err)
	}
	if ct := n.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if d := n.header.Get(dlocal.HeaderDate); d != dlocal.FormatDate(fixedNow()) {
		t.Errorf("X-Date = %q", d)
	}
	_, raw := do(t, signed(t, http.MethodGet, e.url+"/payments/"+id, ""))
	if !bytes.Equal(n.body, raw) {
		t.Errorf("notification body %s, want the payment object %s", n.body, raw)
	}
	rc.none(t)
}

func TestNotificationFallsBackToConfiguredURL(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	e := start(t, pspsim.Config{NotifyURL: rc.url})
	id := createPayment(t, e, "", "")
	if got := decode(t, rc.next(t).body); got["id"] != id {
		t.Fatalf("notification for %v, want %s", got["id"], id)
	}
}

func TestNotificationRetriesUntil2xx(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, http.StatusInternalServerError, http.StatusServiceUnavailable)
	e := start(t, pspsim.Config{})
	createPayment(t, e, "", rc.url)
	first := rc.next(t)
	for range 2 {
		if n := rc.next(t); !bytes.Equal(n.body, first.body) {
			t.Fatalf("retry body %s differs from %s", n.body, first.body)
		}
	}
	rc.none(t)
	if st := e.srv.Stats(); st.NotificationsSent != 1 || st.NotificationsFailed != 2 {
		t.Errorf("stats = %+v, want 1 sent and 2 failed", st)
	}
}

func TestNotificationGivesUpAfter12Attempts(t *testing.T) {
	t.Parallel()
	statuses := make([]int, 20)
	for i := range statuses {
		statuses[i] = http.StatusInternalServerError
	}
	rc := newReceiver(t, statuses...)
	e := start(t, pspsim.Config{RetryDelay: time.Millisecond})
	createPayment(t, e, "", rc.url)
	for range 12 {
		rc.next(t)
	}
	rc.none(t)
	if st := e.srv.Stats(); st.NotificationsFailed != 12 {
		t.Errorf("stats = %+v, want 12 failed", st)
	}
}

func TestResendCopies(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	e := start(t, pspsim.Config{})
	id := createPayment(t, e, "", rc.url)
	rc.next(t) // the creation notification

	status, got := post(t, e.url+"/sandbox/payments/"+id+"/notify?copies=3", "")
	if status != http.StatusOK || got["sent"] != json.Number("3") {
		t.Fatalf("notify: %d %v", status, got)
	}
	first := rc.next(t)
	for range 2 {
		if n := rc.next(t); !bytes.Equal(n.body, first.body) {
			t.Fatalf("copy %s differs from %s", n.body, first.body)
		}
	}
	rc.none(t)
	if got := decode(t, first.body); got["id"] != id || got["status"] != "PAID" {
		t.Errorf("copy body = %v", got)
	}

	status, got = post(t, e.url+"/sandbox/payments/D-4-nope/notify", "")
	if status != http.StatusNotFound || got["code"] != json.Number("4000") {
		t.Errorf("unknown payment: %d %v", status, got)
	}
	status, _ = post(t, e.url+"/sandbox/payments/"+id+"/notify?copies=0", "")
	if status != http.StatusBadRequest {
		t.Errorf("copies=0: %d, want 400", status)
	}
}

func TestForceStatusPendingToPaid(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	e := start(t, pspsim.Config{})
	id := createPayment(t, e, "100", rc.url)
	if got := decode(t, rc.next(t).body); got["status"] != "PENDING" || got["status_code"] != "100" {
		t.Fatalf("first notification = %v", got)
	}

	status, got := post(t, e.url+"/sandbox/payments/"+id+"/status", `{"status":"PAID"}`)
	if status != http.StatusOK || got["status"] != "PAID" || got["status_code"] != "200" {
		t.Fatalf("force: %d %v", status, got)
	}
	if got := decode(t, rc.next(t).body); got["status"] != "PAID" || got["id"] != id {
		t.Fatalf("second notification = %v", got)
	}
	if _, got := call(t, http.MethodGet, e.url+"/payments/"+id, ""); got["status"] != "PAID" {
		t.Errorf("get after force: %v", got)
	}
}

// A chargeback turns a PAID payment CHARGEBACK and notifies it; a payment
// that is not PAID cannot be charged back.
func TestChargebackOfAPaidPayment(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	e := start(t, pspsim.Config{})
	pending := createPayment(t, e, "100", rc.url)
	rc.next(t)
	if status, got := post(t, e.url+"/sandbox/payments/"+pending+"/chargeback", ""); status != http.StatusBadRequest || got["code"] != json.Number("5002") {
		t.Fatalf("chargeback of a PENDING payment: %d %v, want 400 code 5002", status, got)
	}
	paid := createPayment(t, e, "", rc.url)
	rc.next(t)
	if status, got := post(t, e.url+"/sandbox/payments/"+paid+"/chargeback", ""); status != http.StatusOK || got["status"] != "CHARGEBACK" {
		t.Fatalf("chargeback: %d %v", status, got)
	}
	if got := decode(t, rc.next(t).body); got["status"] != "CHARGEBACK" || got["id"] != paid {
		t.Fatalf("chargeback notification = %v", got)
	}
	if _, got := call(t, http.MethodGet, e.url+"/payments/"+paid, ""); got["status"] != "CHARGEBACK" {
		t.Errorf("get after chargeback: %v", got)
	}
}

func TestStatsAndHealth(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{})
	createPayment(t, e, "", "")
	req, _ := http.NewRequest(http.MethodGet, e.url+"/sandbox/stats", nil)
	status, raw := do(t, req)
	got := decode(t, raw)
	if status != http.StatusOK || got["payments"] != json.Number("1") || got["refunds"] != json.Number("0") {
		t.Errorf("stats: %d %s", status, raw)
	}
	req, _ = http.NewRequest(http.MethodGet, e.url+"/healthz", nil)
	if status, _ := do(t, req); status != http.StatusOK {
		t.Errorf("healthz: %d", status)
	}
}

func del(h string) func(*http.Request) { return func(r *http.Request) { r.Header.Del(h) } }

func set(h, v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set(h, v) } }
