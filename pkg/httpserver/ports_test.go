package httpserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// serve starts a server with a failing readiness check and the admin
// routes, and returns its public and admin base URLs.
func serve(t *testing.T) (public, admin string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_test_total", Help: "A test counter."}))
	failing := Check{Name: "postgres", Check: func(context.Context) error {
		return errors.New("dial tcp 10.1.2.3:5432: password authentication failed for user onceflow")
	}}
	s := New(zap.NewNop(), Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, reg, failing)
	s.Echo().GET("/v1/ping", func(c echo.Context) error { return c.String(http.StatusOK, "pong") })
	s.Admin("s3cret").GET("/status", func(c echo.Context) error { return c.String(http.StatusOK, "fine") })
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + s.Addr(), "http://" + s.AdminAddr()
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The public port serves the service's routes and the probes and nothing
// an operator uses; the admin port serves those, and not the public routes.
func TestPortsServeTheirOwnRoutes(t *testing.T) {
	t.Parallel()
	public, admin := serve(t)
	for _, tc := range []struct {
		base, path string
		want       int
	}{
		{public, "/v1/ping", http.StatusOK},
		{public, "/healthz", http.StatusOK},
		{public, "/admin/status", http.StatusNotFound},
		{public, "/metrics", http.StatusNotFound},
		{public, "/debug/pprof/", http.StatusNotFound},
		{public, "/debug/pprof/heap", http.StatusNotFound},
		{admin, "/admin/status", http.StatusOK},
		{admin, "/metrics", http.StatusOK},
		{admin, "/debug/pprof/", http.StatusOK},
		{admin, "/healthz", http.StatusOK},
		{admin, "/v1/ping", http.StatusNotFound},
	} {
		if code, _ := fetch(t, tc.base+tc.path); code != tc.want {
			t.Errorf("%s%s = %d, want %d", tc.base, tc.path, code, tc.want)
		}
	}
	if _, body := fetch(t, admin+"/metrics"); !strings.Contains(body, "onceflow_test_total 0") {
		t.Errorf("admin /metrics lacks the registry's series:\n%s", body)
	}
}

// /readyz on the public port says unready and nothing more; on the admin
// port it names the failed check and its error.
func TestReadyzShowsErrorsOnlyOnTheAdminPort(t *testing.T) {
	t.Parallel()
	public, admin := serve(t)
	code, body := fetch(t, public+"/readyz")
	if code != http.StatusServiceUnavailable || strings.TrimSpace(body) != `{"status":"unready"}` {
		t.Errorf("public /readyz = %d %s, want 503 {\"status\":\"unready\"}", code, body)
	}
	code, body = fetch(t, admin+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"postgres":"dial tcp 10.1.2.3:5432: password authentication failed`) {
		t.Errorf("admin /readyz = %d %s, want 503 naming the postgres check's error", code, body)
	}
}

// A port that cannot be bound leaves the other one free again.
func TestListenReleasesThePublicPortWhenTheAdminOneFails(t *testing.T) {
	t.Parallel()
	taken := New(zap.NewNop(), Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
	if err := taken.Listen(); err != nil {
		t.Fatal(err)
	}
	defer taken.closeListeners()
	s := New(zap.NewNop(), Addrs{Public: "127.0.0.1:0", Admin: taken.AdminAddr()}, prometheus.NewRegistry())
	if err := s.Listen(); err == nil || !strings.Contains(err.Error(), taken.AdminAddr()) {
		t.Fatalf("Listen on a taken admin port: %v, want an error naming it", err)
	}
	if s.public.ln != nil {
		t.Error("the public listener stays bound after the admin one failed")
	}
}
