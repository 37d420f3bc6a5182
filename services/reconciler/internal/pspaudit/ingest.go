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

// IngestAdmin calls ingest's admin API, which holds the PSP adapters: the
// reconciler reaches the PSPs through ingest, and ingest stays the only
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

func (c *IngestAdmin) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return err
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
		return fmt.Errorf("ingest answered %d: %s", resp.StatusCode, bytes.TrimSpace(body[:min(len(body), 300)]))
	}
	return json.Unmarshal(body, out)
}
