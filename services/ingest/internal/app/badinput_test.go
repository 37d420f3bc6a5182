package app_test

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
)

// Text PostgreSQL cannot store is refused with a 400 JSON error and nothing
// stored, and order lines whose arithmetic overflows are refused naming the
// line.
func TestAPIRefusesBadTextAndOverflow(t *testing.T) {
	t.Parallel()
	e := start(t)
	raw := func(path string, body []byte) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.ingest+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		return e.do(req)
	}
	for name, body := range map[string][]byte{
		"ISO-8859-1 name": []byte("{\"doc_type\":\"CI\",\"doc_country\":\"UY\",\"doc_number\":\"19119365\",\"legal_name\":\"Jos\xe9\"}"),
		"NUL in the name": []byte(`{"doc_type":"CI","doc_country":"UY","doc_number":"19119365","legal_name":"Jo\u0000se"}`),
	} {
		if code, got := raw("/v1/customers", body); code != http.StatusBadRequest || !strings.Contains(got, `"code":"invalid_text"`) {
			t.Errorf("%s: got %d %s, want 400 invalid_text", name, code, got)
		}
	}
	if n := e.count("SELECT count(*) FROM ingest.customers"); n != 0 {
		t.Fatalf("customers = %d, want none stored", n)
	}
	_, body := e.apiPost("/v1/customers", ana, "")
	var c struct{ ID string }
	_ = json.Unmarshal([]byte(body), &c)
	big := int64(1)<<62 + 50 // 2 × big wraps to -2^63 + 100; with MaxInt64 the sum wraps to 99
	code, got := e.apiPost("/v1/orders", map[string]any{"merchant_order_id": "o-wrap", "customer_id": c.ID, "amount_minor": 99, "currency": "UYU",
		"lines": []map[string]any{{"description": "a", "quantity": 2, "unit_minor": big, "amount_minor": big * 2},
			{"description": "b", "quantity": 1, "unit_minor": int64(math.MaxInt64), "amount_minor": int64(math.MaxInt64)}}}, "")
	if code != http.StatusUnprocessableEntity || !strings.Contains(got, `"lines[0]"`) {
		t.Fatalf("overflowing line: %d %s, want 422 naming lines[0]", code, got)
	}
	if n := e.count("SELECT count(*) FROM ingest.orders"); n != 0 {
		t.Fatalf("orders = %d, want none stored", n)
	}
}
