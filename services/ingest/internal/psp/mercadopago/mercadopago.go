// Package mercadopago is ingest's adapter for Mercado Pago, through its Go
// SDK (github.com/mercadopago/sdk-go; docs/wire-mercadopago.md): it
// re-fetches payments (GET /v1/payments/{id}) with the refunds they carry,
// finds an order's payments by external_reference and lists a period's
// (GET /v1/payments/search). A refund is named <payment id>-<refund id>,
// since Mercado Pago reads a refund under its payment.
package mercadopago

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mercadopago/sdk-go/pkg/config"
	"github.com/mercadopago/sdk-go/pkg/mperror"
	"github.com/mercadopago/sdk-go/pkg/payment"
	"github.com/mercadopago/sdk-go/pkg/refund"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

// Name is Mercado Pago's name in the sources file.
const Name = "mercadopago"

// Config reaches Mercado Pago: the access token, and BaseURL to point the
// SDK at a sandbox (empty: api.mercadopago.com).
type Config struct {
	AccessToken string
	BaseURL     string
}

// Client is the Mercado Pago adapter.
type Client struct {
	payments payment.Client
	refunds  refund.Client
}

// New returns the adapter; hc carries the timeouts. A BaseURL that is no
// http(s) URL is an error.
func New(cfg Config, hc *http.Client) (*Client, error) {
	r := rebase{hc: hc}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("mercado pago base URL %q: want an http(s) URL", cfg.BaseURL)
		}
		r.base = u
	}
	c, err := config.New(cfg.AccessToken, config.WithHTTPClient(r))
	if err != nil {
		return nil, err
	}
	return &Client{payments: payment.NewClient(c), refunds: refund.NewClient(c)}, nil
}

// rebase sends the SDK's requests (written for api.mercadopago.com) to
// base, when set, under base's path (a sandbox serving several PSPs under
// path prefixes).
type rebase struct {
	hc   *http.Client
	base *url.URL
}

// Do implements the SDK's requester.
func (r rebase) Do(req *http.Request) (*http.Response, error) {
	if r.base != nil {
		req.URL.Scheme, req.URL.Host, req.Host = r.base.Scheme, r.base.Host, r.base.Host
		req.URL.Path, req.URL.RawPath = strings.TrimRight(r.base.Path, "/")+req.URL.Path, ""
	}
	return r.hc.Do(req)
}

// Name is "mercadopago".
func (c *Client) Name() string { return Name }

// Payment re-fetches payment id.
func (c *Client) Payment(ctx context.Context, id string) (psp.Payment, error) {
	n, err := strconv.Atoi(id)
	if err != nil {
		return psp.Payment{}, errkind.New(errkind.NotFound, "mercado pago payment ids are numbers, not %q", id)
	}
	p, err := c.payments.Get(ctx, n)
	if err != nil {
		return psp.Payment{}, kind(err, "fetch payment")
	}
	return normalize(*p)
}

// Refund re-fetches refund id (<payment id>-<refund id>).
func (c *Client) Refund(ctx context.Context, id string) (psp.Refund, error) {
	pay, ref, ok := strings.Cut(id, "-")
	p, perr := strconv.Atoi(pay)
	r, rerr := strconv.Atoi(ref)
	if !ok || perr != nil || rerr != nil {
		return psp.Refund{}, errkind.New(errkind.NotFound, "mercado pago refund %q: want <payment id>-<refund id>", id)
	}
	got, err := c.refunds.Get(ctx, p, r)
	if err != nil {
		return psp.Refund{}, kind(err, "fetch refund")
	}
	p2, err := c.payments.Get(ctx, p) // the refund answer carries no currency
	if err != nil {
		return psp.Refund{}, kind(err, "fetch payment of refund")
	}
	amount, err := minor(got.Amount, p2.CurrencyID)
	if err != nil {
		return psp.Refund{}, err
	}
	return psp.Refund{ID: id, PaymentID: pay, Status: refundStatus(got.Status), StatusCode: got.Status, AmountMinor: amount,
		Currency: strings.ToUpper(p2.CurrencyID), Created: got.DateCreated.UTC()}, nil
}

// PaymentsOfOrder finds the payments whose external_reference is orderRef.
func (c *Client) PaymentsOfOrder(ctx context.Context, orderRef string) ([]psp.Payment, error) {
	return c.search(ctx, map[string]string{"external_reference": orderRef})
}

// PaymentsCreated lists the payments created in [from, to).
func (c *Client) PaymentsCreated(ctx context.Context, from, to time.Time) ([]psp.Payment, error) {
	found, err := c.search(ctx, period("date_created", from, to))
	if err != nil {
		return nil, err
	}
	var out []psp.Payment
	for _, p := range found {
		if !p.Created.Before(from) && p.Created.Before(to) {
			out = append(out, p)
		}
	}
	return out, nil
}

// RefundsCreated lists the refunds created in [from, to), read from the
// payments updated since from (a refund updates its payment).
func (c *Client) RefundsCreated(ctx context.Context, from, to time.Time) ([]psp.Refund, error) {
	found, err := c.search(ctx, period("date_last_updated", from, time.Now().Add(time.Minute)))
	if err != nil {
		return nil, err
	}
	var out []psp.Refund
	for _, p := range found {
		for _, r := range p.Refunds {
			if !r.Created.Before(from) && r.Created.Before(to) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func period(field string, from, to time.Time) map[string]string {
	return map[string]string{"range": field, "begin_date": from.UTC().Format(time.RFC3339Nano), "end_date": to.UTC().Format(time.RFC3339Nano)}
}

// maxResults bounds one search, so a PSP that always says "more" cannot
// keep a caller forever.
const maxResults = 100000

// search reads every page of GET /v1/payments/search with filters.
func (c *Client) search(ctx context.Context, filters map[string]string) ([]psp.Payment, error) {
	var out []psp.Payment
	for offset := 0; offset < maxResults; {
		filters["sort"], filters["criteria"] = "date_created", "asc"
		page, err := c.payments.Search(ctx, payment.SearchRequest{Limit: 100, Offset: offset, Filters: filters})
		if err != nil {
			return nil, kind(err, "search payments")
		}
		for _, r := range page.Results {
			p, err := normalize(r)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
		offset += len(page.Results)
		if len(page.Results) == 0 || offset >= page.Paging.Total {
			return out, nil
		}
	}
	return nil, errkind.New(errkind.Unavailable, "search payments: more than %d results", maxResults)
}

// normalize maps a payment and the refunds it carries.
func normalize(r payment.Response) (psp.Payment, error) {
	amount, err := minor(r.TransactionAmount, r.CurrencyID)
	if err != nil {
		return psp.Payment{}, err
	}
	id := strconv.Itoa(r.ID)
	p := psp.Payment{ID: id, Status: paymentStatus(r.Status), StatusCode: r.Status, AmountMinor: amount,
		Currency: strings.ToUpper(r.CurrencyID), OrderID: r.ExternalReference, Created: r.DateCreated.UTC()}
	for _, ref := range r.Refunds {
		a, err := minor(ref.Amount, r.CurrencyID)
		if err != nil {
			return psp.Payment{}, err
		}
		p.Refunds = append(p.Refunds, psp.Refund{ID: id + "-" + strconv.Itoa(ref.ID), PaymentID: id, Status: refundStatus(ref.Status),
			StatusCode: ref.Status, AmountMinor: a, Currency: p.Currency, Created: ref.DateCreated.UTC()})
	}
	return p, nil
}

// zeroDecimal are the currencies Mercado Pago bills in whole units.
var zeroDecimal = map[string]bool{"CLP": true, "PYG": true}

// minor turns Mercado Pago's decimal amount into minor units. The SDK reads
// it as a float64; rounding to the currency's exponent recovers the
// decimal Mercado Pago sent (at most two places), exactly for any amount
// below 2^53 minor units.
func minor(amount float64, currency string) (int64, error) {
	scale := 100.0
	if zeroDecimal[strings.ToUpper(currency)] {
		scale = 1
	}
	v := math.Round(amount * scale)
	if amount < 0 || math.IsNaN(v) || v > 1<<53 {
		return 0, errkind.New(errkind.Unavailable, "mercado pago amount %v: not a payable amount", amount)
	}
	return int64(v), nil
}

// paymentStatus maps a payment status. approved is PAID; refunded stays
// PAID (it was paid; its refunds are credit notes); charged_back is a
// chargeback.
func paymentStatus(s string) string {
	switch s {
	case "approved", "refunded":
		return psp.StatusPaid
	case "charged_back":
		return psp.StatusChargeback
	case "authorized":
		return psp.StatusAuthorized
	case "pending", "in_process", "in_mediation":
		return psp.StatusPending
	case "rejected":
		return psp.StatusRejected
	case "cancelled":
		return psp.StatusCancelled
	}
	return strings.ToUpper(s)
}

// refundStatus maps a refund status; approved is SUCCESS.
func refundStatus(s string) string {
	switch s {
	case "approved":
		return psp.StatusSuccess
	case "in_process", "pending":
		return psp.StatusPending
	case "rejected":
		return psp.StatusRejected
	case "cancelled":
		return psp.StatusCancelled
	}
	return strings.ToUpper(s)
}

// kind gives an SDK error its errkind, from the HTTP status only (the
// message echoes Mercado Pago's body).
func kind(err error, what string) error {
	var re *mperror.ResponseError
	if !errors.As(err, &re) {
		return errkind.Wrap(errkind.Unavailable, err, what+": mercado pago unreachable")
	}
	switch {
	case re.StatusCode == http.StatusNotFound:
		return errkind.New(errkind.NotFound, "%s: mercado pago answered 404", what)
	case re.StatusCode == http.StatusTooManyRequests || re.StatusCode >= 500:
		return errkind.New(errkind.Unavailable, "%s: mercado pago answered %d", what, re.StatusCode)
	}
	return errkind.New(errkind.Internal, "%s: mercado pago answered %d", what, re.StatusCode)
}
