package pspaudit

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
)

// Payment is a PSP payment as ingest's admin API lists it: the money, its
// status and our order reference, never buyer data.
type Payment struct {
	PSP         string    `json:"psp"`
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	AmountMinor int64     `json:"amount_minor"`
	Currency    string    `json:"currency"`
	OrderID     string    `json:"order_id"`
	Created     time.Time `json:"created"`
}

// Refund is a PSP refund as ingest's admin API lists it.
type Refund struct {
	PSP         string    `json:"psp"`
	ID          string    `json:"id"`
	PaymentID   string    `json:"payment_id"`
	Status      string    `json:"status"`
	AmountMinor int64     `json:"amount_minor"`
	Currency    string    `json:"currency"`
	Created     time.Time `json:"created"`
}

// IngestAdmin calls ingest's admin API, which holds the PSP adapters and
// ingest's outbox: the reconciler reaches the PSPs through ingest, asks it
// to announce a billing event again (the sweep), and ingest stays the only
// writer of its tables.
type IngestAdmin struct {
	base  string
	token string
	http  *http.Client
}

// NewIngestAdmin returns a client of ingest's admin API at base (e.g.
// http://ingest:9090) with its ADMIN_TOKEN; hc carries the timeouts.
func NewIngestAdmin(base, token string, hc *http.Client) *IngestAdmin {
	return &IngestAdmin{base: strings.TrimRight(base, "/"), token: token, http: hc}
}

// Payments lists every configured PSP's payments created in [from, to).
func (c *IngestAdmin) Payments(ctx context.Context, from, to time.Time) ([]Payment, error) {
	q := url.Values{"from": {from.UTC().Format(time.RFC3339Nano)}, "to": {to.UTC().Format(time.RFC3339Nano)}}
	var out struct {
		Payments []Payment `json:"payments"`
	}
	if err := c.do(ctx, http.MethodGet, "/admin/psp/payments?"+q.Encode(), &out); err != nil {
		return nil, fmt.Errorf("list PSP payments through ingest: %w", err)
	}
	return out.Payments, nil
}

// Refunds lists every configured PSP's refunds created in [from, to).
func (c *IngestAdmin) Refunds(ctx context.Context, from, to time.Time) ([]Refund, error) {
	q := url.Values{"from": {from.UTC().Format(time.RFC3339Nano)}, "to": {to.UTC().Format(time.RFC3339Nano)}}
	var out struct {
		Refunds []Refund `json:"refunds"`
	}
	if err := c.do(ctx, http.MethodGet, "/admin/psp/refunds?"+q.Encode(), &out); err != nil {
		return nil, fmt.Errorf("list PSP refunds through ingest: %w", err)
	}
	return out.Refunds, nil
}

// Recover asks ingest to re-fetch object id (kind "payment" or "refund")
// of psp and apply it as its webhook; it reports whether that status was
// new to ingest.
func (c *IngestAdmin) Recover(ctx context.Context, psp, kind, id string) (recorded bool, err error) {
	var out struct {
		Recorded bool `json:"recorded"`
	}
	path := "/admin/psp/" + url.PathEscape(psp) + "/" + kind + "s/" + url.PathEscape(id) + "/recover"
	if err := c.do(ctx, http.MethodPost, path, &out); err != nil {
		return false, fmt.Errorf("recover %s %s %s through ingest: %w", psp, kind, id, err)
	}
	return out.Recorded, nil
}

// Republished is what ingest did with the event keys of a Republish.
type Republished struct {
	Republished []string `json:"republished"` // due again: the relay publishes them once more
	Parked      []string `json:"parked"`      // refused: their outbox row is parked
	Unknown     []string `json:"unknown"`     // no outbox row under the key
}

// MaxRepublish is how many event keys one Republish may name (ingest's
// bound).
const MaxRepublish = 100

// Republish asks ingest to make the outbox rows of keys (billing event
// keys, at most MaxRepublish) due again, so that the relay publishes them
// once more, signed with its key: POST /admin/outbox/republish. The
// reconciler never reads the events themselves.
func (c *IngestAdmin) Republish(ctx context.Context, keys []string) (Republished, error) {
	var out Republished
	body, err := json.Marshal(map[string][]string{"event_keys": keys})
	if err != nil {
		return out, err
	}
	if err := c.send(ctx, http.MethodPost, "/admin/outbox/republish", body, &out); err != nil {
		return out, fmt.Errorf("republish through ingest: %w", err)
	}
	return out, nil
}

// StatusError is an answer of ingest's admin API other than 200.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("ingest answered %d: %s", e.Code, e.Body) }

func (c *IngestAdmin) do(ctx context.Context, method, path string, out any) error {
	return c.send(ctx, method, path, nil, out)
}

func (c *IngestAdmin) send(ctx context.Context, method, path string, reqBody []byte, out any) error {
	var rd io.Reader
	if reqBody != nil {
		rd = bytes.NewReader(reqBody)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Code: resp.StatusCode, Body: string(bytes.TrimSpace(body[:min(len(body), 300)]))}
	}
	return json.Unmarshal(body, out)
}
