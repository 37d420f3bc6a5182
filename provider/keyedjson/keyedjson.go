// Package keyedjson adapts a generic JSON e-invoicing provider that takes an
// Idempotency-Key on emission and answers a GET by that key:
//
//	POST {base}/documents        Idempotency-Key: <reference>   → the document
//	GET  {base}/documents/{key}  → the document, or 404 when none
//
// with "Authorization: Bearer <token>". The key is the document's
// deterministic reference, so a resend after an ambiguous outcome returns
// the document first stored instead of creating a second one. The fiscal
// sandbox serves this shape under /api.
//
// Like the InvoiCy adapter, errors wrap fiscal.ErrRefused (the provider
// surely did not act) or fiscal.ErrAmbiguous (it may have); the package logs
// nothing and its errors carry no bodies.
package keyedjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/provider/fiscal"
)

// DefaultStatusMap maps the provider's status words to fiscal states.
func DefaultStatusMap() map[string]fiscal.Status {
	return map[string]fiscal.Status{"pending": fiscal.StatusPendingDGI, "authorized": fiscal.StatusAuthorized,
		"observed": fiscal.StatusObserved, "rejected": fiscal.StatusRejected, "voided": fiscal.StatusVoided}
}

// Config is what the adapter needs.
type Config struct {
	BaseURL       string
	Token         string
	Timeout       time.Duration // per call, rate-limit wait included
	RatePerSecond float64       // zero: no limit
	Burst         int
	StatusMap     map[string]fiscal.Status // nil: DefaultStatusMap
}

// Client calls the provider; it is safe for concurrent use.
type Client struct {
	base     string
	token    string
	timeout  time.Duration
	statuses map[string]fiscal.Status
	limiter  *rate.Limiter
	hc       *http.Client
}

// New validates cfg and returns a client; the error names the bad field.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("keyed config: BaseURL %q must be an absolute http(s) URL", cfg.BaseURL)
	case cfg.Token == "":
		return nil, errors.New("keyed config: Token is required")
	case cfg.Timeout <= 0:
		return nil, errors.New("keyed config: Timeout must be positive")
	}
	c := &Client{base: strings.TrimRight(cfg.BaseURL, "/"), token: cfg.Token, timeout: cfg.Timeout,
		statuses: cfg.StatusMap, limiter: rate.NewLimiter(rate.Inf, 1),
		hc: &http.Client{Transport: httpclient.Transport(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if c.statuses == nil {
		c.statuses = DefaultStatusMap()
	}
	if cfg.RatePerSecond > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(cfg.RatePerSecond), max(cfg.Burst, 1))
	}
	return c, nil
}

// Idempotent reports that a resend with the same key is safe: the emission
// loop need not wait a settle window before it.
func (c *Client) Idempotent() bool { return true }

// Emit posts doc with its reference as Idempotency-Key and returns the
// document the provider holds under it.
func (c *Client) Emit(ctx context.Context, doc fiscal.Document) (fiscal.Held, error) {
	if err := doc.Validate(); err != nil {
		return fiscal.Held{}, fmt.Errorf("keyed emit: %w: %w", fiscal.ErrRefused, err)
	}
	body, err := json.Marshal(request(doc))
	if err != nil {
		return fiscal.Held{}, fmt.Errorf("keyed emit %s: %w: %w", doc.Reference, fiscal.ErrRefused, err)
	}
	status, answer, err := c.do(ctx, http.MethodPost, "/documents", doc.Reference, body)
	if err != nil {
		return fiscal.Held{}, fmt.Errorf("keyed emit %s: %w", doc.Reference, err)
	}
	if status/100 != 2 {
		return fiscal.Held{}, fmt.Errorf("keyed emit %s: %w: HTTP %d", doc.Reference, classify(status), status)
	}
	h, err := c.held(answer)
	if err != nil {
		return fiscal.Held{}, fmt.Errorf("keyed emit %s: %w: %w", doc.Reference, fiscal.ErrAmbiguous, err)
	}
	return h, nil
}

// Lookup returns the document held under reference, nil when none. Any
// error means nothing is known.
func (c *Client) Lookup(ctx context.Context, reference string) ([]fiscal.Held, error) {
	if !fiscal.ValidReference(reference) {
		return nil, fmt.Errorf("keyed lookup: %w: malformed reference", fiscal.ErrRefused)
	}
	status, answer, err := c.do(ctx, http.MethodGet, "/documents/"+reference, "", nil)
	switch {
	case err != nil:
		return nil, fmt.Errorf("keyed lookup %s: %w", reference, err)
	case status == http.StatusNotFound:
		return nil, nil
	case status != http.StatusOK:
		return nil, fmt.Errorf("keyed lookup %s: %w: HTTP %d", reference, fiscal.ErrAmbiguous, status)
	}
	h, err := c.held(answer)
	if err != nil {
		return nil, fmt.Errorf("keyed lookup %s: %w: %w", reference, fiscal.ErrAmbiguous, err)
	}
	return []fiscal.Held{h}, nil
}

// classify tells a refusal from an ambiguous status (fiscal.StatusOutcome).
func classify(status int) error { return fiscal.StatusOutcome(status) }

// do sends one request and returns the status and body. A failure before
// the request left this process is fiscal.ErrUnavailable (a refusal), after
// it fiscal.ErrAmbiguous.
func (c *Client) do(ctx context.Context, method, path, key string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := c.limiter.Wait(ctx); err != nil {
		return 0, nil, fmt.Errorf("%w: rate limit: %w", fiscal.ErrUnavailable, err)
	}
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { sent.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: build request: %w", fiscal.ErrRefused, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if sent.Load() {
			return 0, nil, fmt.Errorf("%w: %w", fiscal.ErrAmbiguous, err)
		}
		return 0, nil, fmt.Errorf("%w: not sent: %w", fiscal.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: reading answer: %w", fiscal.ErrAmbiguous, err)
	}
	return resp.StatusCode, answer, nil
}
