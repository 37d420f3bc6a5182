package openapitest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/onceflow/onceflow/api/openapi"
)

// Every document is valid OpenAPI 3.1 (the validator checks it against the
// specification's schema).
func TestDocumentsAreValidOpenAPI(t *testing.T) {
	for _, svc := range openapi.Services {
		t.Run(svc, func(t *testing.T) {
			if doc := openapi.Document(svc); !strings.HasPrefix(string(doc), "openapi: 3.1.") {
				t.Fatalf("%s's document does not start with openapi: 3.1.x", svc)
			}
			Validator(t, svc)
		})
	}
}

// Ingest's public document, cut from its whole one, is valid OpenAPI too.
func TestPublicDocumentIsValidOpenAPI(t *testing.T) {
	b, err := openapi.Public("ingest")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("ingest's public document is not valid OpenAPI: %s", describe(verrs))
	}
}

// recorder is a testing.TB that keeps the failures it is told about.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

// The client lets a documented exchange through, and fails the test for a
// response the document does not allow and for an accepted request it does
// not allow; a refused bad request is not held to it.
func TestClientFailsExchangesOutsideTheDocument(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		answer                   string
		fails                    bool
	}{
		{"documented", http.MethodGet, "/admin/outboxes", "", 200, `{"outboxes":[{"outbox":"ingest.outbox","pending":0,"parked":1}]}`, false},
		{"wrong response type", http.MethodGet, "/admin/outboxes", "", 200, `{"outboxes":[{"outbox":"ingest.outbox","pending":"none","parked":1}]}`, true},
		{"undocumented error shape", http.MethodGet, "/admin/outboxes", "", 401, `{"message":"no"}`, true},
		{"documented error", http.MethodGet, "/admin/outboxes", "", 401, `{"error":{"code":"unauthorized","message":"no"}}`, false},
		{"accepted bad request", http.MethodPost, "/admin/outboxes/ingest.outbox/replay", `{"limit":"ten"}`, 200, `{"outbox":"ingest.outbox","replayed":0,"last_id":0,"more":false}`, true},
		{"refused bad request", http.MethodPost, "/admin/outboxes/ingest.outbox/replay", `{"limit":"ten"}`, 400, `{"error":{"code":"invalid_body","message":"limit"}}`, false},
		{"undocumented path", http.MethodGet, "/admin/nothing", "", 200, `{}`, true},
		{"router's not found", http.MethodGet, "/admin/nothing", "", 404, `{"error":{"code":"not_found","message":"Not Found"}}`, false},
		{"not found without an ErrorBody", http.MethodGet, "/admin/nothing", "", 404, `404 page not found`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.answer))
			}))
			defer srv.Close()
			rec := &recorder{TB: t}
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer t-admin")
			resp, err := Client(rec, "relay", nil).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if failed := len(rec.failures) > 0; failed != tc.fails {
				t.Fatalf("failed = %v (%v), want %v", failed, rec.failures, tc.fails)
			}
		})
	}
}

// Routes names a registered route the document lacks, and passes the
// documented ones, the profiles and echo's own not-found routes.
func TestRoutesNamesUndocumentedRoutes(t *testing.T) {
	e := echo.New()
	noop := func(echo.Context) error { return nil }
	e.GET("/admin/outboxes", noop)
	e.POST("/admin/outboxes/:outbox/replay", noop)
	e.GET("/debug/pprof/*", noop)
	e.GET("/admin/secret", noop)
	rec := &recorder{TB: t}
	Routes(rec, "relay", e.Routes())
	if len(rec.failures) != 1 || !strings.Contains(rec.failures[0], "GET /admin/secret") {
		t.Fatalf("failures %v, want one naming GET /admin/secret", rec.failures)
	}
}
