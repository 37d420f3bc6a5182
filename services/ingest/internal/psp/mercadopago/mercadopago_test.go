package mercadopago

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/sandbox/mpsim"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

const token = "TEST-access-token"

func sandbox(t *testing.T) (*Client, string) {
	t.Helper()
	srv := httptest.NewServer(mpsim.New(mpsim.Config{AccessToken: token}))
	t.Cleanup(srv.Close)
	c, err := New(Config{AccessToken: token, BaseURL: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c, srv.URL
}

func post(t *testing.T, url string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %v", url, resp.StatusCode, err)
	}
	return out
}

func id(m map[string]any) string { return fmt.Sprint(int64(m["id"].(float64))) }

// Against the sandbox, through the SDK: amounts in minor units (UYU two
// decimals, CLP none), the order from external_reference, statuses mapped
// (refunded stays PAID, charged_back is a chargeback), refunds listed on
// their payment and fetched under <payment>-<refund>, NotFound for unknown
// ids.
func TestFetchesFromTheSandbox(t *testing.T) {
	c, base := sandbox(t)
	ctx := context.Background()
	uyu := id(post(t, base+"/sandbox/payments", map[string]any{"amount": "1250.50", "currency": "UYU", "external_reference": "o-mp"}))
	p, err := c.Payment(ctx, uyu)
	if err != nil || p.Status != psp.StatusPaid || p.AmountMinor != 125050 || p.Currency != "UYU" || p.OrderID != "o-mp" || p.Created.IsZero() {
		t.Fatalf("UYU payment = %+v (%v)", p, err)
	}
	clp := id(post(t, base+"/sandbox/payments", map[string]any{"amount": "5000", "currency": "CLP", "external_reference": "o-clp"}))
	if p, err := c.Payment(ctx, clp); err != nil || p.AmountMinor != 5000 || p.Currency != "CLP" {
		t.Fatalf("CLP payment = %+v (%v)", p, err)
	}
	post(t, base+"/sandbox/payments/"+uyu+"/refund", map[string]any{"amount_minor": 5050})
	rest := post(t, base+"/sandbox/payments/"+uyu+"/refund", map[string]any{})
	p, err = c.Payment(ctx, uyu)
	if err != nil || p.Status != psp.StatusPaid || p.StatusCode != "refunded" || len(p.Refunds) != 2 || p.Refunds[0].AmountMinor != 5050 ||
		p.Refunds[1].ID != uyu+"-"+id(rest) || p.Refunds[1].Status != psp.StatusSuccess {
		t.Fatalf("refunded payment = %+v (%v)", p, err)
	}
	r, err := c.Refund(ctx, p.Refunds[1].ID)
	if err != nil || r.AmountMinor != 120000 || r.PaymentID != uyu || r.Currency != "UYU" || r.Status != psp.StatusSuccess {
		t.Fatalf("refund = %+v (%v)", r, err)
	}
	post(t, base+"/sandbox/payments/"+clp+"/status", map[string]any{"status": "charged_back"})
	if p, err := c.Payment(ctx, clp); err != nil || p.Status != psp.StatusChargeback {
		t.Fatalf("charged back = %+v (%v)", p, err)
	}
	for _, bad := range []string{"999", "x"} {
		if _, err := c.Payment(ctx, bad); !errkind.Is(err, errkind.NotFound) {
			t.Errorf("payment %s: %v, want NotFound", bad, err)
		}
	}
	if _, err := c.Refund(ctx, uyu+"-1"); !errkind.Is(err, errkind.NotFound) {
		t.Errorf("unknown refund: %v, want NotFound", err)
	}
}

// An order's payments are found by external_reference across pages; a
// period's payments and refunds are listed.
func TestSearchesAndListsAtTheSandbox(t *testing.T) {
	c, base := sandbox(t)
	ctx := context.Background()
	from := time.Now().Add(-time.Minute)
	var want []string
	for range 101 { // more than a page of 100
		want = append(want, id(post(t, base+"/sandbox/payments", map[string]any{"amount": "1", "currency": "UYU", "external_reference": "o-many"})))
	}
	other := id(post(t, base+"/sandbox/payments", map[string]any{"amount": "2", "currency": "UYU", "external_reference": "o-other"}))
	found, err := c.PaymentsOfOrder(ctx, "o-many")
	if err != nil || len(found) != 101 || found[0].ID != want[0] || found[100].ID != want[100] {
		t.Fatalf("PaymentsOfOrder = %d payments (%v), want 101", len(found), err)
	}
	all, err := c.PaymentsCreated(ctx, from, time.Now().Add(time.Minute))
	if err != nil || len(all) != 102 {
		t.Fatalf("PaymentsCreated = %d (%v), want 102", len(all), err)
	}
	post(t, base+"/sandbox/payments/"+other+"/refund", map[string]any{"amount_minor": 50})
	refunds, err := c.RefundsCreated(ctx, from, time.Now().Add(time.Minute))
	if err != nil || len(refunds) != 1 || refunds[0].PaymentID != other || refunds[0].AmountMinor != 50 {
		t.Fatalf("RefundsCreated = %+v (%v), want the one refund of %s", refunds, err, other)
	}
}

// A base URL with a path (one sandbox serving several PSPs under prefixes)
// keeps it: the SDK's /v1/... calls go under the prefix.
func TestBaseURLPathIsAPrefix(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/mercadopago/", http.StripPrefix("/mercadopago", mpsim.New(mpsim.Config{AccessToken: token})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := New(Config{AccessToken: token, BaseURL: srv.URL + "/mercadopago/"}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	pay := id(post(t, srv.URL+"/mercadopago/sandbox/payments", map[string]any{"amount": "10.00", "currency": "UYU", "external_reference": "o-prefix"}))
	p, err := c.Payment(context.Background(), pay)
	if err != nil || p.OrderID != "o-prefix" || p.AmountMinor != 1000 {
		t.Fatalf("payment through the prefix = %+v (%v)", p, err)
	}
}
