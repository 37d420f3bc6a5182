package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Exit codes scripts can rely on.
const (
	ExitOK          = 0 // done; with status --check: nothing needs a person
	ExitProblem     = 1 // a service refused the request, or status --check found work for a person
	ExitUsage       = 2 // bad command or flag
	ExitUnreachable = 3 // a service did not answer
)

// Error is a failure with the exit code it maps to.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// client calls one service's admin endpoints with the admin token.
type client struct {
	service, base, token string
	http                 *http.Client
}

// apiError is the services' JSON error body.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// call sends method path with body (JSON, may be nil) and decodes the
// answer into out; it returns the raw answer too, for --json.
func (c client) call(ctx context.Context, method, path string, body, out any) (json.RawMessage, error) {
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		in = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, in)
	if err != nil {
		return nil, &Error{ExitUsage, fmt.Errorf("%s: %w", c.service, err)}
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &Error{ExitUnreachable, fmt.Errorf("%s at %s does not answer: %w", c.service, c.base, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, &Error{ExitUnreachable, fmt.Errorf("%s: read answer: %w", c.service, err)}
	}
	if resp.StatusCode >= 300 {
		var e apiError
		if json.Unmarshal(raw, &e) == nil && e.Error.Code != "" {
			return nil, &Error{ExitProblem, fmt.Errorf("%s answered %d %s: %s", c.service, resp.StatusCode, e.Error.Code, e.Error.Message)}
		}
		return nil, &Error{ExitProblem, fmt.Errorf("%s answered %d", c.service, resp.StatusCode)}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, &Error{ExitProblem, fmt.Errorf("%s: unexpected answer: %w", c.service, err)}
		}
	}
	return raw, nil
}

// ExitCode maps an error from Execute to the process's exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitUsage // cobra's own errors are bad commands or flags
}
