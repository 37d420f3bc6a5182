// Package psp is ingest's client of the payment provider's API (dLocal's
// Payins shape): it re-fetches payments and refunds, because a webhook body
// is only a hint.
package psp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/money"
)

// Payment is the authoritative state of a payment at the PSP.
type Payment struct {
	ID          string
	Status      string
	AmountMinor int64
	Currency    string
	OrderID     string // the merchant's order id
}

// Refund is the authoritative state of a refund at the PSP.
type Refund struct {
	ID          string
	PaymentID   string
	Status      string
	AmountMinor int64
	Currency    string
}

// Config holds the API credentials: login and trans key identify the
// merchant, the secret key signs requests.
type Config struct {
	BaseURL   string
	Login     string
	TransKey  string
	SecretKey string
}

// Client calls the PSP's API with dLocal's request signing.
type Client struct {
	cfg  Config
	http *http.Client
	now  func() time.Time
}

// New returns a client; hc carries the timeouts.
func New(cfg Config, hc *http.Client) *Client {
	return &Client{cfg: cfg, http: hc, now: time.Now}
}

// wire is the JSON both objects share; amount stays a json.Number so it is
// parsed as a decimal, and status_code may be a string or a number.
type wire struct {
	ID        string      `json:"id"`
	PaymentID string      `json:"payment_id"`
	Status    string      `json:"status"`
	Amount    json.Number `json:"amount"`
	Currency  string      `json:"currency"`
	OrderID   string      `json:"order_id"`
}

// Payment fetches a payment. A missing payment is errkind.NotFound; a PSP
// that is down or answers 5xx is errkind.Unavailable.
func (c *Client) Payment(ctx context.Context, id string) (Payment, error) {
	var w wire
	if err := c.get(ctx, "/payments/"+url.PathEscape(id), &w); err != nil {
		return Payment{}, fmt.Errorf("fetch payment: %w", err)
	}
	amount, err := money.ParseMinor(w.Amount.String())
	if err != nil {
		return Payment{}, fmt.Errorf("fetch payment %s: amount: %w", id, err)
	}
	return Payment{ID: w.ID, Status: strings.ToUpper(w.Status), AmountMinor: amount, Currency: strings.ToUpper(w.Currency), OrderID: w.OrderID}, nil
}

// Refund fetches a refund, with the same error kinds as Payment.
func (c *Client) Refund(ctx context.Context, id string) (Refund, error) {
	var w wire
	if err := c.get(ctx, "/refunds/"+url.PathEscape(id), &w); err != nil {
		return Refund{}, fmt.Errorf("fetch refund: %w", err)
	}
	amount, err := money.ParseMinor(w.Amount.String())
	if err != nil {
		return Refund{}, fmt.Errorf("fetch refund %s: amount: %w", id, err)
	}
	return Refund{ID: w.ID, PaymentID: w.PaymentID, Status: strings.ToUpper(w.Status), AmountMinor: amount, Currency: strings.ToUpper(w.Currency)}, nil
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.cfg.BaseURL, "/")+path, nil)
	if err != nil {
		return errkind.Wrap(errkind.Internal, err, "build request")
	}
	c.sign(req, nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return errkind.Wrap(errkind.Unavailable, err, "psp unreachable")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return errkind.Wrap(errkind.Unavailable, err, "read psp answer")
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errkind.New(errkind.NotFound, "psp answered 404 for %s", path)
	case resp.StatusCode >= 500:
		return errkind.New(errkind.Unavailable, "psp answered %d", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return errkind.New(errkind.Internal, "psp answered %d: %s", resp.StatusCode, errorCode(body))
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(out); err != nil {
		return errkind.Wrap(errkind.Unavailable, err, "decode psp answer")
	}
	return nil
}

// sign adds dLocal's authentication headers for body.
func (c *Client) sign(req *http.Request, body []byte) {
	date := dlocal.FormatDate(c.now())
	req.Header.Set(dlocal.HeaderDate, date)
	req.Header.Set(dlocal.HeaderLogin, c.cfg.Login)
	req.Header.Set(dlocal.HeaderTransKey, c.cfg.TransKey)
	req.Header.Set(dlocal.HeaderVersion, "2.1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "onceflow-ingest")
	req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(c.cfg.SecretKey, c.cfg.Login, date, body)))
}

// errorCode extracts dLocal's numeric error code, never the message, which
// may echo request data.
func errorCode(body []byte) string {
	var e struct {
		Code json.Number `json:"code"`
	}
	if json.Unmarshal(body, &e) != nil || e.Code == "" {
		return "no error code"
	}
	return "code " + e.Code.String()
}
