// Package dlocal is ingest's adapter for dLocal's Payins API
// (docs/wire-dlocal.md): it re-fetches payments, refunds and subscription
// executions, because a webhook body is only a hint, finds an order's
// payments and lists a period's. dLocal's payment statuses are already the normalized ones of package
// psp.
package dlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	dlocalsig "github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

// Name is dLocal's name in the sources file.
const Name = "dlocal"

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

// Name is "dlocal".
func (c *Client) Name() string { return Name }

// Payment fetches a payment, or a subscription's execution when id is one
// (ExecutionPaymentID). A missing payment is errkind.NotFound; a PSP that
// is down or answers 5xx is errkind.Unavailable.
func (c *Client) Payment(ctx context.Context, id string) (psp.Payment, error) {
	if sub, exec, ok := parseExecutionID(id); ok {
		return c.execution(ctx, id, sub, exec)
	}
	var w wire
	if err := c.get(ctx, "/payments/"+url.PathEscape(id), &w); err != nil {
		return psp.Payment{}, fmt.Errorf("fetch payment: %w", err)
	}
	p, err := w.payment()
	if err != nil {
		return psp.Payment{}, fmt.Errorf("fetch payment %s: %w", id, err)
	}
	return p, nil
}

// Refund fetches a refund, with the same error kinds as Payment.
func (c *Client) Refund(ctx context.Context, id string) (psp.Refund, error) {
	var w wire
	if err := c.get(ctx, "/refunds/"+url.PathEscape(id), &w); err != nil {
		return psp.Refund{}, fmt.Errorf("fetch refund: %w", err)
	}
	r, err := w.refund()
	if err != nil {
		return psp.Refund{}, fmt.Errorf("fetch refund %s: %w", id, err)
	}
	return r, nil
}

// PaymentsOfOrder finds the payments dLocal holds for merchant order
// orderRef: GET /payments?order_id= (docs/wire-dlocal.md says what of this
// call is assumed).
func (c *Client) PaymentsOfOrder(ctx context.Context, orderRef string) ([]psp.Payment, error) {
	return listAll(ctx, c, "/payments", url.Values{"order_id": {orderRef}}, wire.payment)
}

// PaymentsCreated lists the payments created in [from, to), page by page
// (GET /payments?created_from=&created_to=&page=), then the subscription
// executions created in it, as the payments ingest records them under.
func (c *Client) PaymentsCreated(ctx context.Context, from, to time.Time) ([]psp.Payment, error) {
	pays, err := listAll(ctx, c, "/payments", period(from, to), wire.payment)
	if err != nil {
		return nil, err
	}
	execs, err := c.executionsCreated(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("subscription executions: %w", err)
	}
	return append(pays, execs...), nil
}

// RefundsCreated lists the refunds created in [from, to), page by page:
// GET /refunds?created_from=&created_to=&page= (assumed, as the payments'
// listing).
func (c *Client) RefundsCreated(ctx context.Context, from, to time.Time) ([]psp.Refund, error) {
	return listAll(ctx, c, "/refunds", period(from, to), wire.refund)
}

func period(from, to time.Time) url.Values {
	return url.Values{"created_from": {from.UTC().Format(time.RFC3339Nano)}, "created_to": {to.UTC().Format(time.RFC3339Nano)}}
}

// maxPages bounds one listing, so a PSP that always says "more" cannot keep
// a caller forever.
const maxPages = 1000

// listAll reads every page of GET path with q, decoding each object.
func listAll[T any](ctx context.Context, c *Client, path string, q url.Values, decode func(wire) (T, error)) ([]T, error) {
	var out []T
	err := eachPage(ctx, c, path, q, func(w wire) error {
		v, err := decode(w)
		if err != nil {
			return fmt.Errorf("%s: %w", w.ID, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// eachPage hands each object of every page of GET path with q to each, at
// most maxPages pages. Another page follows while the answer says
// has_more, or while its page is below its total_pages (the shape some
// subscription listings are seen in).
func eachPage[W any](ctx context.Context, c *Client, path string, q url.Values, each func(W) error) error {
	for page := 1; page <= maxPages; page++ {
		q.Set("page", strconv.Itoa(page))
		var l struct {
			Data       []W  `json:"data"`
			HasMore    bool `json:"has_more"`
			TotalPages int  `json:"total_pages"`
		}
		if err := c.get(ctx, path+"?"+q.Encode(), &l); err != nil {
			return fmt.Errorf("list %s: %w", path, err)
		}
		for _, w := range l.Data {
			if err := each(w); err != nil {
				return fmt.Errorf("list %s: %w", path, err)
			}
		}
		if !l.HasMore && page >= l.TotalPages {
			return nil
		}
	}
	return errkind.New(errkind.Unavailable, "list %s: more than %d pages", path, maxPages)
}

// refund decodes w as a refund.
func (w wire) refund() (psp.Refund, error) {
	amount, created, err := w.decode()
	if err != nil {
		return psp.Refund{}, err
	}
	return psp.Refund{ID: w.ID, PaymentID: w.PaymentID, Status: strings.ToUpper(w.Status), StatusCode: string(w.StatusCode),
		AmountMinor: amount, Currency: strings.ToUpper(w.Currency), Created: created}, nil
}

// payment decodes w as a payment.
func (w wire) payment() (psp.Payment, error) {
	amount, created, err := w.decode()
	if err != nil {
		return psp.Payment{}, err
	}
	return psp.Payment{ID: w.ID, Status: strings.ToUpper(w.Status), StatusCode: string(w.StatusCode), AmountMinor: amount,
		Currency: strings.ToUpper(w.Currency), OrderID: w.OrderID, Created: created}, nil
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
	date := dlocalsig.FormatDate(c.now())
	req.Header.Set(dlocalsig.HeaderDate, date)
	req.Header.Set(dlocalsig.HeaderLogin, c.cfg.Login)
	req.Header.Set(dlocalsig.HeaderTransKey, c.cfg.TransKey)
	req.Header.Set(dlocalsig.HeaderVersion, "2.1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "onceflow-ingest")
	req.Header.Set(dlocalsig.HeaderAuthorization, dlocalsig.Authorization(dlocalsig.Sign(c.cfg.SecretKey, c.cfg.Login, date, body)))
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
