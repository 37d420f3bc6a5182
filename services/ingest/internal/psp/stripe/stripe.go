// Package stripe is ingest's adapter for Stripe, through stripe-go
// (docs/wire-stripe.md): it re-fetches PaymentIntents and Refunds, finds an
// order's PaymentIntents by our order id in their metadata, and lists a
// period's. Stripe's amounts are already in the currency's smallest unit,
// zero-decimal currencies included, and its statuses are mapped onto
// package psp's; a PaymentIntent whose charge is disputed is a chargeback.
package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v84"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

// Name is Stripe's name in the sources file.
const Name = "stripe"

// OrderKey is the PaymentIntent metadata key holding our merchant order id.
const OrderKey = "order_id"

// Config reaches Stripe: the secret API key, and BaseURL to point the
// client at a sandbox (empty: Stripe's API); a BaseURL's path prefixes
// every call (a sandbox serving several PSPs under path prefixes).
type Config struct {
	APIKey  string
	BaseURL string
}

// Client is the Stripe adapter.
type Client struct {
	sc *stripego.Client
}

// New returns the adapter; hc carries the timeouts. stripe-go's own
// retries are off: the apply worker and the poller retry with backoff.
func New(cfg Config, hc *http.Client) *Client {
	bc := &stripego.BackendConfig{HTTPClient: hc, MaxNetworkRetries: stripego.Int64(0),
		LeveledLogger: &stripego.LeveledLogger{Level: stripego.LevelNull}}
	if cfg.BaseURL != "" {
		bc.URL = stripego.String(strings.TrimRight(cfg.BaseURL, "/"))
		if u, err := url.Parse(cfg.BaseURL); err == nil && strings.Trim(u.Path, "/") != "" {
			// stripe-go reads its API version from the path it was asked for
			// (/v1/...), so the prefix is added on the way out only.
			prefix := strings.TrimRight(u.Path, "/")
			u.Path = ""
			bc.URL = stripego.String(u.String())
			c := http.Client{}
			if hc != nil {
				c = *hc
			}
			c.Transport = prefixed{prefix: prefix, next: transport(c.Transport)}
			bc.HTTPClient = &c
		}
	}
	b := stripego.GetBackendWithConfig(stripego.APIBackend, bc)
	return &Client{sc: stripego.NewClient(cfg.APIKey, stripego.WithBackends(&stripego.Backends{API: b, Connect: b, Uploads: b, MeterEvents: b}))}
}

// prefixed sends each request under prefix.
type prefixed struct {
	prefix string
	next   http.RoundTripper
}

// RoundTrip implements http.RoundTripper on a copy of req.
func (p prefixed) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Path, out.URL.RawPath = p.prefix+req.URL.Path, ""
	return p.next.RoundTrip(out)
}

// transport is t, or the default transport when nil.
func transport(t http.RoundTripper) http.RoundTripper {
	if t != nil {
		return t
	}
	return http.DefaultTransport
}

// Name is "stripe".
func (c *Client) Name() string { return Name }

// Payment re-fetches PaymentIntent id with its latest charge, to see a
// dispute.
func (c *Client) Payment(ctx context.Context, id string) (psp.Payment, error) {
	params := &stripego.PaymentIntentRetrieveParams{}
	params.AddExpand("latest_charge")
	pi, err := c.sc.V1PaymentIntents.Retrieve(ctx, id, params)
	if err != nil {
		return psp.Payment{}, kind(err, "fetch payment intent")
	}
	return payment(pi), nil
}

// Refund re-fetches Refund id.
func (c *Client) Refund(ctx context.Context, id string) (psp.Refund, error) {
	r, err := c.sc.V1Refunds.Retrieve(ctx, id, nil)
	if err != nil {
		return psp.Refund{}, kind(err, "fetch refund")
	}
	return refund(r), nil
}

// refund normalizes a Refund. The refund of a payment charged in another
// currency is in the currency charged (presentment_details), like the
// payment it refunds.
func refund(r *stripego.Refund) psp.Refund {
	out := psp.Refund{ID: r.ID, Status: refundStatus(r.Status), StatusCode: string(r.Status), AmountMinor: r.Amount,
		Currency: strings.ToUpper(string(r.Currency)), Created: time.Unix(r.Created, 0).UTC()}
	if r.PaymentIntent != nil {
		out.PaymentID = r.PaymentIntent.ID
	}
	if pd := r.PresentmentDetails; pd != nil && pd.PresentmentCurrency != "" && !strings.EqualFold(string(pd.PresentmentCurrency), out.Currency) {
		out.AmountMinor, out.Currency = pd.PresentmentAmount, strings.ToUpper(string(pd.PresentmentCurrency))
	}
	return out
}

// PaymentsOfOrder searches the PaymentIntents whose metadata names
// orderRef. Stripe's search is eventually consistent (about a minute), far
// shorter than the poller's first wait.
func (c *Client) PaymentsOfOrder(ctx context.Context, orderRef string) ([]psp.Payment, error) {
	params := &stripego.PaymentIntentSearchParams{}
	params.Query = fmt.Sprintf("metadata['%s']:'%s'", OrderKey, quote(orderRef))
	params.AddExpand("data.latest_charge")
	var out []psp.Payment
	for pi, err := range c.sc.V1PaymentIntents.Search(ctx, params) {
		if err != nil {
			return nil, kind(err, "search payment intents")
		}
		out = append(out, payment(pi))
	}
	return out, nil
}

// PaymentsCreated lists the PaymentIntents created in [from, to), every
// page.
func (c *Client) PaymentsCreated(ctx context.Context, from, to time.Time) ([]psp.Payment, error) {
	params := &stripego.PaymentIntentListParams{CreatedRange: &stripego.RangeQueryParams{
		GreaterThanOrEqual: from.Unix(), LesserThan: upTo(to)}}
	params.Limit = stripego.Int64(100)
	params.AddExpand("data.latest_charge")
	var out []psp.Payment
	for pi, err := range c.sc.V1PaymentIntents.List(ctx, params) {
		if err != nil {
			return nil, kind(err, "list payment intents")
		}
		out = append(out, payment(pi))
	}
	return out, nil
}

// upTo is the first whole second at or after to: Stripe's creation times
// are whole seconds, so an object created in to's own second, before to,
// is in [from, to).
func upTo(to time.Time) int64 {
	return to.Add(time.Second - 1).Unix()
}

// quote escapes a value for Stripe's search query language.
func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
}

// payment normalizes a PaymentIntent. One the customer paid in another
// currency (Adaptive Pricing: presentment_details) was charged that
// amount and currency, converted from the PaymentIntent's own.
func payment(pi *stripego.PaymentIntent) psp.Payment {
	status := paymentStatus(pi.Status)
	if status == psp.StatusPaid && pi.LatestCharge != nil && pi.LatestCharge.Disputed {
		status = psp.StatusChargeback
	}
	p := psp.Payment{ID: pi.ID, Status: status, StatusCode: string(pi.Status), AmountMinor: pi.Amount,
		Currency: strings.ToUpper(string(pi.Currency)), OrderID: pi.Metadata[OrderKey], Created: time.Unix(pi.Created, 0).UTC()}
	if pd := pi.PresentmentDetails; pd != nil && pd.PresentmentCurrency != "" && !strings.EqualFold(string(pd.PresentmentCurrency), p.Currency) {
		p.Conversion = &psp.Conversion{AmountMinor: p.AmountMinor, Currency: p.Currency}
		p.AmountMinor, p.Currency = pd.PresentmentAmount, strings.ToUpper(string(pd.PresentmentCurrency))
	}
	return p
}

// paymentStatus maps a PaymentIntent status; only succeeded is PAID.
func paymentStatus(s stripego.PaymentIntentStatus) string {
	switch s {
	case stripego.PaymentIntentStatusSucceeded:
		return psp.StatusPaid
	case stripego.PaymentIntentStatusCanceled:
		return psp.StatusCancelled
	case stripego.PaymentIntentStatusRequiresCapture:
		return psp.StatusAuthorized
	case stripego.PaymentIntentStatusProcessing, stripego.PaymentIntentStatusRequiresAction,
		stripego.PaymentIntentStatusRequiresConfirmation, stripego.PaymentIntentStatusRequiresPaymentMethod:
		return psp.StatusPending
	}
	return strings.ToUpper(string(s))
}

// refundStatus maps a Refund status; only succeeded is SUCCESS.
func refundStatus(s stripego.RefundStatus) string {
	switch s {
	case stripego.RefundStatusSucceeded:
		return psp.StatusSuccess
	case stripego.RefundStatusFailed:
		return psp.StatusRejected
	case stripego.RefundStatusCanceled:
		return psp.StatusCancelled
	case stripego.RefundStatusPending, stripego.RefundStatusRequiresAction:
		return psp.StatusPending
	}
	return strings.ToUpper(string(s))
}

// kind gives a stripe-go error its errkind: 404 NotFound, 429, 5xx and
// network failures Unavailable, anything else Internal (with Stripe's
// error code, never its message, which may echo request data).
func kind(err error, what string) error {
	var se *stripego.Error
	if !errors.As(err, &se) {
		return errkind.Wrap(errkind.Unavailable, err, what+": stripe unreachable")
	}
	switch {
	case se.HTTPStatusCode == http.StatusNotFound:
		return errkind.New(errkind.NotFound, "%s: stripe answered 404", what)
	case se.HTTPStatusCode == http.StatusTooManyRequests || se.HTTPStatusCode >= 500:
		return errkind.New(errkind.Unavailable, "%s: stripe answered %d", what, se.HTTPStatusCode)
	}
	return errkind.New(errkind.Internal, "%s: stripe answered %d (%s)", what, se.HTTPStatusCode, se.Code)
}

// RefundsCreated lists the Refunds created in [from, to), every page.
func (c *Client) RefundsCreated(ctx context.Context, from, to time.Time) ([]psp.Refund, error) {
	params := &stripego.RefundListParams{CreatedRange: &stripego.RangeQueryParams{
		GreaterThanOrEqual: from.Unix(), LesserThan: upTo(to)}}
	params.Limit = stripego.Int64(100)
	var out []psp.Refund
	for r, err := range c.sc.V1Refunds.List(ctx, params) {
		if err != nil {
			return nil, kind(err, "list refunds")
		}
		out = append(out, refund(r))
	}
	return out, nil
}
