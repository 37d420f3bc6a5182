package app_test

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func (e *env) apiPost(path string, body any, key string) (int, string) {
	e.t.Helper()
	h := http.Header{"Authorization": {"Bearer " + token}}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	return e.post(e.ingest+path, body, h)
}

func TestCustomerFieldsAreValidatedByDocumentType(t *testing.T) {
	t.Parallel()
	e := start(t)
	tests := []struct {
		name   string
		in     customer
		fields []string // the fields the 422 must name; none means 201
	}{
		{"valid RUT", acme, nil},
		{"valid CI written with dots", customer{"doc_type": "CI", "doc_country": "UY", "doc_number": "1.234.567-2", "legal_name": "Someone Else"}, nil},
		{"RUT with a wrong check digit", with(acme, "doc_number", "210000000018"), []string{"doc_number"}},
		{"RUT without address and city", with(with(acme, "address", ""), "city", ""), []string{"address", "city"}},
		{"CI with a wrong check digit", with(ana, "doc_number", "19119364"), []string{"doc_number"}},
		{"CI of another country", with(ana, "doc_country", "AR"), []string{"doc_number"}},
		{"unknown type, no name, bad email", customer{"doc_type": "DNI", "doc_country": "Uruguay", "doc_number": "1", "email": "not-an-email"},
			[]string{"doc_type", "doc_country", "legal_name", "email"}},
		{"passport", customer{"doc_type": "passport", "doc_country": "BR", "doc_number": "FX123456", "legal_name": "Visitor"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := e.apiPost("/v1/customers", tc.in, "")
			if tc.fields == nil {
				if code != http.StatusCreated {
					t.Fatalf("got %d %s, want 201", code, body)
				}
				return
			}
			var out struct {
				Error struct {
					Fields map[string]string `json:"fields"`
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(body), &out)
			if code != http.StatusUnprocessableEntity || len(out.Error.Fields) != len(tc.fields) {
				t.Fatalf("got %d %s, want 422 naming %v", code, body, tc.fields)
			}
			for _, f := range tc.fields {
				if out.Error.Fields[f] == "" {
					t.Fatalf("422 %s does not name %s", body, f)
				}
			}
		})
	}
	if n := e.count("SELECT count(*) FROM ingest.customers"); n != 3 {
		t.Fatalf("customers stored = %d, want the 3 valid ones", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.customers WHERE doc_number = '12345672'"); n != 1 {
		t.Fatal("a CI is not stored as digits only")
	}
}

func with(c customer, field, value string) customer {
	out := customer{}
	for k, v := range c {
		out[k] = v
	}
	out[field] = value
	return out
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := start(t)
	code, first := e.apiPost("/v1/customers", acme, "key-1")
	if code != http.StatusCreated {
		t.Fatalf("first: %d %s", code, first)
	}
	code, again := e.apiPost("/v1/customers", acme, "key-1")
	if code != http.StatusCreated || again != first {
		t.Fatalf("same key and body: %d %s, want the first response %s", code, again, first)
	}
	if n := e.count("SELECT count(*) FROM ingest.customers"); n != 1 {
		t.Fatalf("customers = %d after a retried POST, want 1", n)
	}
	code, other := e.apiPost("/v1/customers", ana, "key-1")
	if code != http.StatusUnprocessableEntity || !strings.Contains(other, "idempotency_key_reused") {
		t.Fatalf("same key, other body: %d %s, want 422", code, other)
	}

	// A request still running under the key: its claim has no response yet.
	b, _ := json.Marshal(ana)
	hash := sha256.Sum256(b)
	if _, err := e.pool.Exec(t.Context(), "INSERT INTO ingest.idempotency_keys (route, key, request_hash) VALUES ('/v1/customers', 'key-2', $1)", hash[:]); err != nil {
		t.Fatal(err)
	}
	code, busy := e.apiPost("/v1/customers", ana, "key-2")
	if code != http.StatusConflict || !strings.Contains(busy, "idempotency_key_in_progress") {
		t.Fatalf("key in progress: %d %s, want 409", code, busy)
	}

	// A refused request is answered the same way again, and stores nothing.
	bad := with(acme, "doc_number", "1")
	c1, b1 := e.apiPost("/v1/customers", bad, "key-3")
	c2, b2 := e.apiPost("/v1/customers", bad, "key-3")
	if c1 != http.StatusUnprocessableEntity || c2 != c1 || b2 != b1 {
		t.Fatalf("refused request replayed as %d %s, first was %d %s", c2, b2, c1, b1)
	}
	if n := e.count("SELECT count(*) FROM ingest.customers"); n != 1 {
		t.Fatalf("customers = %d, want 1", n)
	}
}

// A create retried under its Idempotency-Key after the first attempt
// committed the order but died before finishing the key (a SIGKILL or a
// PostgreSQL crash, seen in the chaos run; the stale claim is taken again)
// answers the order, not 409, when the body is the same; another body under
// the merchant order id is still a conflict.
func TestOrderRetriedAfterACrashIsTheSameOrder(t *testing.T) {
	t.Parallel()
	e := start(t)
	_, body := e.apiPost("/v1/customers", ana, "")
	var c struct{ ID string }
	_ = json.Unmarshal([]byte(body), &c)
	order := map[string]any{"merchant_order_id": "o-crash", "customer_id": c.ID, "amount_minor": 100, "currency": "UYU", "psp_payment_id": "D-crash"}
	code, first := e.apiPost("/v1/orders", order, "order-o-crash")
	if code != http.StatusCreated {
		t.Fatalf("first: %d %s", code, first)
	}
	if _, err := e.pool.Exec(t.Context(), "DELETE FROM ingest.idempotency_keys WHERE key = 'order-o-crash'"); err != nil {
		t.Fatal(err) // as if the attempt died before FinishIdempotent and its claim went stale
	}
	if code, again := e.apiPost("/v1/orders", order, "order-o-crash"); code != http.StatusCreated || again != first {
		t.Fatalf("retry: %d %s, want 201 and the first order %s", code, again, first)
	}
	other := map[string]any{"merchant_order_id": "o-crash", "customer_id": c.ID, "amount_minor": 200, "currency": "UYU"}
	if code, got := e.apiPost("/v1/orders", other, "order-o-crash-2"); code != http.StatusConflict {
		t.Fatalf("another order under the merchant id: %d %s, want 409", code, got)
	}
	if n := e.count("SELECT count(*) FROM ingest.orders"); n != 1 {
		t.Fatalf("orders = %d, want 1", n)
	}
}

func TestOrdersAreValidatedAndListed(t *testing.T) {
	t.Parallel()
	e := start(t)
	_, body := e.apiPost("/v1/customers", ana, "")
	var c struct{ ID string }
	_ = json.Unmarshal([]byte(body), &c)
	code, got := e.apiPost("/v1/orders", map[string]any{"merchant_order_id": "", "customer_id": c.ID, "amount_minor": -5, "currency": "pesos",
		"lines": []map[string]any{{"description": "x", "quantity": 2, "unit_minor": 10, "amount_minor": 21}}}, "")
	for _, f := range []string{"merchant_order_id", "amount_minor", "currency", "lines[0]"} {
		if code != http.StatusUnprocessableEntity || !strings.Contains(got, `"`+f+`"`) {
			t.Fatalf("invalid order: %d %s, want 422 naming %s", code, got, f)
		}
	}
	for _, id := range []string{"o-l1", "o-l2", "o-l3"} {
		if code, got := e.apiPost("/v1/orders", map[string]any{"merchant_order_id": id, "customer_id": c.ID, "amount_minor": 100, "currency": "UYU"}, ""); code != http.StatusCreated {
			t.Fatalf("order %s: %d %s", id, code, got)
		}
	}
	if code, got := e.apiPost("/v1/orders", map[string]any{"merchant_order_id": "o-l1", "customer_id": c.ID, "amount_minor": 100, "currency": "UYU"}, ""); code != http.StatusConflict {
		t.Fatalf("duplicate merchant_order_id: %d %s, want 409", code, got)
	}
	if code, got := e.apiPost("/v1/orders", map[string]any{"merchant_order_id": "o-l9", "customer_id": "00000000-0000-4000-8000-000000000000", "amount_minor": 100, "currency": "UYU"}, ""); code != http.StatusUnprocessableEntity || !strings.Contains(got, `"customer_id"`) {
		t.Fatalf("unknown customer: %d %s, want 422 naming customer_id", code, got)
	}
	auth := http.Header{"Authorization": {"Bearer " + token}}
	var seen []string
	cursor := ""
	for range 4 {
		_, page := e.get(e.ingest+"/v1/orders?limit=2&cursor="+cursor, auth)
		var out struct {
			Orders []struct {
				MerchantOrderID string `json:"merchant_order_id"`
			} `json:"orders"`
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal([]byte(page), &out); err != nil {
			t.Fatalf("list: %s", page)
		}
		for _, o := range out.Orders {
			seen = append(seen, o.MerchantOrderID)
		}
		if cursor = out.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(seen, ",") != "o-l1,o-l2,o-l3" {
		t.Fatalf("paged list = %v, want the three orders in creation order", seen)
	}
}
