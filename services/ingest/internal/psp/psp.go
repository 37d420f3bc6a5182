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
	StatusCode  string // dLocal's code for the status, e.g. "200"
	Created     time.Time
	// Conversion, when the PSP charged in another currency than the one it
	// was asked for, is what it converted from; nil otherwise. AmountMinor
	// and Currency are always what was charged.
	Conversion *Conversion
}

// Conversion is the amount and currency a payment was asked for, when the
// PSP charged it in another currency.
type Conversion struct {
	AmountMinor int64
	Currency    string
}

// Refund is the authoritative state of a refund at the PSP.
type Refund struct {
	ID          string
	PaymentID   string
	Status      string
	AmountMinor int64
	Currency    string
	StatusCode  string
	Created     time.Time
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

// Payment fetches a payment. A missing payment is errkind.NotFound; a PSP
// that is down or answers 5xx is errkind.Unavailable.
func (c *Client) Payment(ctx context.Context, id string) (Payment, error) {
	var w wire
	if err := c.get(ctx, "/payments/"+url.PathEscape(id), &w); err != nil {
		return Payment{}, fmt.Errorf("fetch payment: %w", err)
	}
	amount, created, err := w.decode()
	if err != nil {
		return Payment{}, fmt.Errorf("fetch payment %s: %w", id, err)
	}
	conv, err := w.conversion()
	if err != nil {
		return Payment{}, fmt.Errorf("fetch payment %s: %w", id, err)
	}
	return Payment{ID: w.ID, Status: strings.ToUpper(w.Status), StatusCode: string(w.StatusCode), AmountMinor: amount,
		Currency: strings.ToUpper(w.Currency), OrderID: w.OrderID, Created: created, Conversion: conv}, nil
}

// conversion reads the amount and currency the payment was asked for, when
// the PSP reports one other than the charged currency.
func (w wire) conversion() (*Conversion, error) {
	cur := strings.ToUpper(strings.TrimSpace(w.OrderCurrency))
	if cur == "" || cur == strings.ToUpper(w.Currency) {
		return nil, nil
	}
	amount, err := money.ParseMinor(w.OrderAmount.String())
	if err != nil {
		return nil, errkind.Wrap(errkind.Unavailable, err, "order_amount")
	}
	return &Conversion{AmountMinor: amount, Currency: cur}, nil
}

// Refund fetches a refund, with the same error kinds as Payment.
func (c *Client) Refund(ctx context.Context, id string) (Refund, error) {
	var w wire
	if err := c.get(ctx, "/refunds/"+url.PathEscape(id), &w); err != nil {
		return Refund{}, fmt.Errorf("fetch refund: %w", err)
	}
	amount, created, err := w.decode()
	if err != nil {
		return Refund{}, fmt.Errorf("fetch refund %s: %w", id, err)
	}
	return Refund{ID: w.ID, PaymentID: w.PaymentID, Status: strings.ToUpper(w.Status), StatusCode: string(w.StatusCode),
		AmountMinor: amount, Currency: strings.ToUpper(w.Currency), Created: created}, nil
}

// decode reads the amount into minor units and the creation date, and
// refuses a success status its code contradicts.
func (w wire) decode() (amountMinor int64, created time.Time, err error) {
	if amountMinor, err = money.ParseMinor(w.Amount.String()); err != nil {
		return 0, time.Time{}, errkind.Wrap(errkind.Unavailable, err, "amount")
	}
	if created, err = parseDate(w.CreatedDate); err != nil {
		return 0, time.Time{}, errkind.Wrap(errkind.Unavailable, err, "created_date")
	}
	if !consistent(strings.ToUpper(w.Status), w.StatusCode) {
		return 0, time.Time{}, errkind.New(errkind.Unavailable, "status %s with status_code %s: not trusted yet", w.Status, w.StatusCode)
	}
	return amountMinor, created, nil
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
