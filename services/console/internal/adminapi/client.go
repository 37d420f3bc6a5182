// Package adminapi is the console's client of the four services' admin
// APIs (the /admin endpoints behind ADMIN_TOKEN): the only way the console
// reads or changes anything. Each service's base URL is configurable, so
// the console follows wherever a service serves /admin.
package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Services names the four services' admin base URLs.
type Services struct {
	Ingest, Relay, Invoicer, Reconciler string
}

// Client calls the services' admin endpoints with the admin token.
type Client struct {
	urls  map[string]string
	token string
	http  *http.Client
}

// New returns a client of the services at urls, authenticating with token.
func New(urls Services, token string, timeout time.Duration) *Client {
	return &Client{token: token, http: &http.Client{Timeout: timeout}, urls: map[string]string{
		"ingest": urls.Ingest, "relay": urls.Relay, "invoicer": urls.Invoicer, "reconciler": urls.Reconciler}}
}

// Error is a service's refusal: its HTTP status and the JSON error body's
// code and message.
type Error struct {
	Service string
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s answered %d %s: %s", e.Service, e.Status, e.Code, e.Message)
}

// Get calls GET path at service with query and decodes the answer into out.
func (c *Client) Get(ctx context.Context, service, path string, query url.Values, out any) error {
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	return c.do(ctx, http.MethodGet, service, path, nil, out)
}

// Post calls POST path at service with body as JSON and decodes the answer
// into out (when not nil).
func (c *Client) Post(ctx context.Context, service, path string, body, out any) error {
	return c.do(ctx, http.MethodPost, service, path, body, out)
}

func (c *Client) do(ctx context.Context, method, service, path string, body, out any) error {
	base, ok := c.urls[service]
	if !ok {
		return fmt.Errorf("unknown service %q", service)
	}
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, in)
	if err != nil {
		return fmt.Errorf("%s: %w", service, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s does not answer: %w", service, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", service, err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return &Error{Service: service, Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: unexpected answer: %w", service, err)
	}
	return nil
}
