// Package openapitest holds the services' tests to their OpenAPI documents
// (package openapi): Routes fails a test for a registered route the
// document lacks, and Client returns an HTTP client that fails the test
// for any exchange that does not match the document.
package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/errors"

	"github.com/onceflow/onceflow/api/openapi"
)

// undocumented are the route prefixes no document describes: Go's runtime
// profiles (net/http/pprof).
var undocumented = []string{"/debug/pprof"}

var (
	mu         sync.Mutex
	validators = map[string]validator.Validator{}
)

// Validator returns the validator of service's document, built once per
// test binary; a document that is not valid OpenAPI fails tb.
func Validator(tb testing.TB, service string) validator.Validator {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if v, ok := validators[service]; ok {
		return v
	}
	doc, err := libopenapi.NewDocument(openapi.Document(service))
	if err != nil {
		tb.Fatalf("%s's OpenAPI document: %v", service, err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		tb.Fatalf("%s's OpenAPI document: %v", service, errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		tb.Fatalf("%s's OpenAPI document is not valid OpenAPI: %s", service, describe(verrs))
	}
	validators[service] = v
	return v
}

// Routes fails tb for every route (of the public and the admin port) whose
// method and path service's document lacks.
func Routes(tb testing.TB, service string, routes []*echo.Route) {
	tb.Helper()
	doc, err := libopenapi.NewDocument(openapi.Document(service))
	if err != nil {
		tb.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		tb.Fatal(err)
	}
	paths := model.Model.Paths.PathItems
	if len(routes) == 0 {
		tb.Fatalf("%s: no routes to check", service)
	}
	for _, r := range routes {
		if skipped(r) {
			continue
		}
		item, ok := paths.Get(templated(r.Path))
		if !ok || item.GetOperations().GetOrZero(strings.ToLower(r.Method)) == nil {
			tb.Errorf("%s serves %s %s, which its OpenAPI document (api/openapi/%s.yaml) lacks", service, r.Method, r.Path, service)
		}
	}
}

// skipped reports a route no document describes: the profiles, and the
// routes echo adds by itself (its not-found handlers of groups).
func skipped(r *echo.Route) bool {
	for _, p := range undocumented {
		if strings.HasPrefix(r.Path, p) {
			return true
		}
	}
	return r.Method == echo.RouteNotFound || strings.HasSuffix(r.Path, "*")
}

// templated turns echo's ":id" into OpenAPI's "{id}".
func templated(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") {
			parts[i] = "{" + p[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// Client returns an HTTP client that fails tb for every exchange with a
// response the document does not allow, and for every request a service
// accepted (2xx) that the document does not allow (a test's deliberately
// bad request, answered 4xx, is not held to it). A 404 or 405 need only be
// an ErrorBody: the router answers those for any path. base is the
// transport (nil for http.DefaultTransport); when hosts are given
// (host:port), only exchanges with them are checked, so one client can
// also call a sandbox.
func Client(tb testing.TB, service string, base http.RoundTripper, hosts ...string) *http.Client {
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: &checker{tb: tb, v: Validator(tb, service), next: base, hosts: hosts}}
}

// checker is the validating transport.
type checker struct {
	tb    testing.TB
	v     validator.Validator
	next  http.RoundTripper
	hosts []string
}

// checks reports whether the exchange with host is held to the document.
func (c *checker) checks(host string) bool {
	return len(c.hosts) == 0 || slices.Contains(c.hosts, host)
}

// RoundTrip sends req, its body streamed as the caller writes it and kept
// on the side, then checks the exchange against the document.
func (c *checker) RoundTrip(req *http.Request) (*http.Response, error) {
	var sent bytes.Buffer
	if req.Body != nil {
		req = req.Clone(req.Context())
		req.Body = teeCloser{Reader: io.TeeReader(req.Body, &sent), Closer: req.Body}
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil // the caller reads the same short body and fails on it
	}
	if c.checks(req.URL.Host) {
		c.check(req, sent.Bytes(), resp, respBody)
	}
	return resp, nil
}

// teeCloser is a request body copied as it is read.
type teeCloser struct {
	io.Reader
	io.Closer
}

func (c *checker) check(req *http.Request, body []byte, resp *http.Response, respBody []byte) {
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		var e struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal(respBody, &e) != nil || e.Error.Code == "" || e.Error.Message == "" {
			c.tb.Errorf("OpenAPI: %d to %s %s is not an ErrorBody: %.300s", resp.StatusCode, req.Method, req.URL.Path, respBody)
		}
		return
	}
	probe := req.Clone(req.Context())
	probe.Body = io.NopCloser(bytes.NewReader(body))
	if resp.StatusCode/100 == 2 {
		if ok, errs := c.v.ValidateHttpRequestSync(probe); !ok {
			c.tb.Errorf("OpenAPI: request %s %s, answered %d, does not match the document: %s", req.Method, req.URL.Path, resp.StatusCode, describe(errs))
		}
		probe.Body = io.NopCloser(bytes.NewReader(body))
	}
	answer := *resp
	answer.Body = io.NopCloser(bytes.NewReader(respBody))
	if ok, errs := c.v.ValidateHttpResponse(probe, &answer); !ok {
		c.tb.Errorf("OpenAPI: response %d to %s %s does not match the document: %s\nbody: %.500s", resp.StatusCode, req.Method, req.URL.Path, describe(errs), respBody)
	}
}

// describe joins validation errors into one line each.
func describe(errs []*errors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n  %s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "\n    %s: %s", s.FieldPath, s.Reason)
		}
	}
	return b.String()
}
