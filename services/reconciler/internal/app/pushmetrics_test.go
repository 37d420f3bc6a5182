package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
)

// A run's push adds to the gateway's group (POST, never the PUT that
// replaces it), and a failed run's push leaves the last-success gauges out,
// so the gateway keeps the last success's times.
func TestPushAddsAndKeepsTheLastSuccessOfAFailedRun(t *testing.T) {
	type request struct{ method, body string }
	got := make(chan request, 2)
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- request{r.Method, string(body)}
		w.WriteHeader(http.StatusOK)
	}))
	defer gateway.Close()
	reg := prometheus.NewRegistry()
	reconcile.NewMetrics(reg, true)

	for _, tc := range []struct {
		succeeded bool
		wantLast  bool
	}{{true, true}, {false, false}} {
		if err := pushMetrics(context.Background(), gateway.URL, reg, tc.succeeded); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.method != http.MethodPost {
			t.Errorf("succeeded=%v: pushed with %s, want POST (add)", tc.succeeded, r.method)
		}
		if !strings.Contains(r.body, "onceflow_reconciler_runs_total") {
			t.Errorf("succeeded=%v: the push lacks the run counter", tc.succeeded)
		}
		for _, name := range lastSuccessMetrics {
			if has := strings.Contains(r.body, name); has != tc.wantLast {
				t.Errorf("succeeded=%v: the push has %s %v, want %v", tc.succeeded, name, has, tc.wantLast)
			}
		}
	}
	if err := pushMetrics(context.Background(), "", reg, true); err != nil {
		t.Errorf("no gateway: %v, want nothing pushed and no error", err)
	}
}
