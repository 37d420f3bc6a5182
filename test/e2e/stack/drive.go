package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/sandbox/pspsim"
)

// Pay creates a customer and an order at ingest, then a payment for it at
// the PSP sandbox, which notifies ingest. It returns the PSP payment id.
func (s *Stack) Pay(ctx context.Context, orderID string, amountMinor int64) (string, error) {
	return s.PayOrder(ctx, orderID, "UYU", []Line{{Description: "Credits pack", Quantity: 1, UnitMinor: amountMinor}})
}

// Line is one line of a demo order; VAT names its VAT indicator (empty is
// the basic rate).
type Line struct {
	Description string
	Quantity    int64
	UnitMinor   int64
	VAT         string
}

// PayOrder creates a customer and an order in currency with lines, then a
// payment of the lines' total (not_billable_negative lines subtracted) at
// the PSP sandbox notified to ingest's webhook, and returns the payment's
// id.
func (s *Stack) PayOrder(ctx context.Context, orderID, currency string, lines []Line) (string, error) {
	total, err := s.Order(ctx, orderID, currency, lines)
	if err != nil {
		return "", err
	}
	return s.CreatePaymentIn(ctx, orderID, total, currency, s.IngestURL+"/webhooks/dlocal")
}

// Order creates a customer identified by a CI and its order in currency
// with lines at ingest, and returns the order's total (not_billable_negative
// lines subtracted).
func (s *Stack) Order(ctx context.Context, orderID, currency string, lines []Line) (int64, error) {
	var customer struct {
		ID string `json:"id"`
	}
	err := s.API(ctx, s.IngestURL, "/v1/customers", map[string]any{
		"doc_type": "CI", "doc_country": "UY", "doc_number": "19119365", "legal_name": "Demo Buyer " + orderID,
		"address": "Av. 18 de Julio 1000", "city": "Montevideo", "department": "Montevideo", "country": "UY",
		"email": "buyer-" + orderID + "@example.com",
	}, "", &customer)
	if err != nil {
		return 0, fmt.Errorf("create customer: %w", err)
	}
	var total int64
	var body []map[string]any
	for _, l := range lines {
		amount := l.Quantity * l.UnitMinor
		if l.VAT == "not_billable_negative" {
			total -= amount
		} else {
			total += amount
		}
		line := map[string]any{"description": l.Description, "quantity": l.Quantity, "unit_minor": l.UnitMinor, "amount_minor": amount}
		if l.VAT != "" {
			line["vat"] = l.VAT
		}
		body = append(body, line)
	}
	err = s.API(ctx, s.IngestURL, "/v1/orders", map[string]any{
		"merchant_order_id": orderID, "customer_id": customer.ID, "amount_minor": total, "currency": currency, "lines": body,
	}, "", nil)
	if err != nil {
		return 0, fmt.Errorf("create order: %w", err)
	}
	return total, nil
}

// CreatePayment creates a payment in UYU at the PSP sandbox for the
// merchant's order, notified at notifyURL, and returns its id.
func (s *Stack) CreatePayment(ctx context.Context, orderID string, amountMinor int64, notifyURL string) (string, error) {
	return s.CreatePaymentIn(ctx, orderID, amountMinor, "UYU", notifyURL)
}

// PSPStats reads the dLocal sandbox's counters (GET /sandbox/stats).
func (s *Stack) PSPStats(ctx context.Context) (pspsim.Stats, error) {
	var st pspsim.Stats
	if err := s.request(ctx, http.MethodGet, s.PSPURL+"/sandbox/stats", nil, &st, nil); err != nil {
		return pspsim.Stats{}, fmt.Errorf("read the PSP sandbox's stats: %w", err)
	}
	return st, nil
}

// CreatePaymentIn creates a payment in currency at the PSP sandbox for the
// merchant's order, notified at notifyURL, and returns its id.
func (s *Stack) CreatePaymentIn(ctx context.Context, orderID string, amountMinor int64, currency, notifyURL string) (string, error) {
	var payment struct {
		ID string `json:"id"`
	}
	err := s.call(ctx, s.PSPURL+"/payments", map[string]any{
		"amount": json.Number(money.FormatMinor(amountMinor)), "currency": currency, "country": "UY",
		"payment_method_id": "CARD", "order_id": orderID, "notification_url": notifyURL,
		"payer": map[string]any{"name": "Demo Buyer", "email": "buyer@example.com", "document": "19119365"},
	}, &payment, s.dlocalSign)
	if err != nil {
		return "", fmt.Errorf("create payment: %w", err)
	}
	return payment.ID, nil
}

// PaymentStatus asks the PSP sandbox for a payment's status.
func (s *Stack) PaymentStatus(ctx context.Context, id string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.PSPURL+"/payments/"+id, nil)
	if err != nil {
		return "", err
	}
	s.dlocalSign(req, nil)
	var p struct {
		Status string `json:"status"`
	}
	err = do(req, &p)
	return p.Status, err
}

// Refund refunds amountMinor of a payment at the PSP sandbox, which
// notifies ingest. It returns the refund id.
func (s *Stack) Refund(ctx context.Context, paymentID string, amountMinor int64) (string, error) {
	return s.RefundTo(ctx, paymentID, amountMinor, s.IngestURL+"/webhooks/dlocal")
}

// RefundTo is Refund with the notification sent to notifyURL.
func (s *Stack) RefundTo(ctx context.Context, paymentID string, amountMinor int64, notifyURL string) (string, error) {
	var refund struct {
		ID string `json:"id"`
	}
	err := s.call(ctx, s.PSPURL+"/refunds", map[string]any{
		"payment_id": paymentID, "amount": json.Number(money.FormatMinor(amountMinor)), "currency": "UYU",
		"notification_url": notifyURL,
	}, &refund, s.dlocalSign)
	if err != nil {
		return "", fmt.Errorf("create refund: %w", err)
	}
	return refund.ID, nil
}

// Admin calls an operator endpoint of the service at base with the admin
// token, decoding the answer into out.
func (s *Stack) Admin(ctx context.Context, base, method, path string, in, out any) error {
	return s.request(ctx, method, base+path, in, out, func(req *http.Request, _ []byte) {
		req.Header.Set("Authorization", "Bearer "+AdminToken)
	})
}

// Sandbox calls one of the fiscal sandbox's /sandbox endpoints.
func (s *Stack) Sandbox(ctx context.Context, method, path string, in any) error {
	return s.request(ctx, method, s.FiscalURL+path, in, nil, nil)
}

// API posts in to an ingest instance's API path with the API token and,
// when key is set, an Idempotency-Key, decoding the answer into out.
func (s *Stack) API(ctx context.Context, base, path string, in any, key string, out any) error {
	return s.call(ctx, base+path, in, out, func(req *http.Request, _ []byte) {
		req.Header.Set("Authorization", "Bearer "+APIToken)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
	})
}

// Get reads an ingest instance's API path with the API token, decoding the
// answer into out.
func (s *Stack) Get(ctx context.Context, base, path string, out any) error {
	return s.request(ctx, http.MethodGet, base+path, nil, out, func(req *http.Request, _ []byte) {
		req.Header.Set("Authorization", "Bearer "+APIToken)
	})
}

// Renotify makes the PSP sandbox deliver a payment's current notification
// copies more times.
func (s *Stack) Renotify(ctx context.Context, paymentID string, copies int) error {
	return s.call(ctx, fmt.Sprintf("%s/sandbox/payments/%s/notify?copies=%d", s.PSPURL, paymentID, copies), nil, nil, nil)
}

// Document is a document held by the fiscal sandbox.
type Document struct {
	Reference string `json:"reference"`
	Type      int    `json:"type"`
	Series    string `json:"series"`
	Number    int    `json:"number"`
	Status    int    `json:"status"`
	Addendum  string `json:"addendum"`
	// Total, Currency and ExchangeRate are TotMntPagar, TotTpoMoneda and
	// TotTpoCambio (empty in UYU) as sent.
	Total        string `json:"total"`
	Currency     string `json:"currency"`
	ExchangeRate string `json:"exchange_rate"`
	// Injected marks a document the sandbox made on purpose (a duplicate
	// fault), not at onceflow's request.
	Injected bool `json:"injected"`
}

// Documents lists what the fiscal sandbox holds.
func (s *Stack) Documents(ctx context.Context) ([]Document, error) {
	var out struct {
		Documents []Document `json:"documents"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.FiscalURL+"/sandbox/documents", nil)
	if err != nil {
		return nil, err
	}
	if err := do(req, &out); err != nil {
		return nil, err
	}
	return out.Documents, nil
}

// BySource counts the sandbox's documents per source, read from the
// addendum onceflow writes ("onceflow <kind> <ref> <document kind>").
func BySource(docs []Document) map[string][]Document {
	out := map[string][]Document{}
	for _, d := range docs {
		f := strings.Fields(d.Addendum)
		if len(f) == 4 && f[0] == "onceflow" {
			out[f[1]+":"+f[2]] = append(out[f[1]+":"+f[2]], d)
		}
	}
	return out
}

// WaitAuthorized waits until the fiscal sandbox holds exactly one
// authorized document for source ("payment:<id>" or "refund:<id>").
func (s *Stack) WaitAuthorized(ctx context.Context, source string, timeout time.Duration) error {
	return WaitFor(ctx, timeout, func() (bool, error) {
		docs, err := s.Documents(ctx)
		held := BySource(docs)[source]
		return len(held) == 1 && held[0].Status == 5, fmt.Errorf("documents for %s: %+v (%v)", source, held, err)
	})
}

// WaitFor polls check until it returns true or timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := check()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not reached within %s (last error: %v)", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Stack) dlocalSign(req *http.Request, body []byte) {
	date := dlocal.FormatDate(time.Now())
	req.Header.Set(dlocal.HeaderDate, date)
	req.Header.Set(dlocal.HeaderLogin, Login)
	req.Header.Set(dlocal.HeaderTransKey, TransKey)
	req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(SecretKey, Login, date, body)))
}

func (s *Stack) call(ctx context.Context, url string, in, out any, auth func(*http.Request, []byte)) error {
	return s.request(ctx, http.MethodPost, url, in, out, auth)
}

// request sends in as JSON with method to url, signed by auth when set, and
// decodes the answer into out.
func (s *Stack) request(ctx context.Context, method, url string, in, out any, auth func(*http.Request, []byte)) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != nil {
		auth(req, body)
	}
	return do(req, out)
}

// client keeps a connection per concurrent caller (a bench's workers)
// open between calls; requests are bounded by their contexts.
var client = httpclient.New(0)

func do(req *http.Request, out any) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
