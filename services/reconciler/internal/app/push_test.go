package app_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
)

// run-once pushes its metrics to the Pushgateway named by
// RECONCILER_PUSHGATEWAY_URL, under the job onceflow-reconciler.
func TestRunOncePushesItsMetrics(t *testing.T) {
	t.Parallel()
	pushed := make(chan string, 1)
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/metrics/job/onceflow-reconciler" {
			pushed <- string(body)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer gateway.Close()
	db := reconcilertest.NewDB(t)
	seed(t, db)
	env := testEnv(t, db)
	env["RECONCILER_PUSHGATEWAY_URL"] = gateway.URL
	if _, err := runMain(env, "run-once"); err != nil {
		t.Errorf("run-once: %v", err)
	}
	select {
	case body := <-pushed:
		if !strings.Contains(body, "onceflow_reconciler_runs_total") || !strings.Contains(body, "onceflow_reconciler_republished_total") {
			t.Fatalf("pushed metrics lack the run's counters (%d bytes)", len(body))
		}
	default:
		t.Fatal("run-once pushed nothing to RECONCILER_PUSHGATEWAY_URL")
	}
}
