package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/api/openapi/openapitest"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/services/reconciler/internal/app"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
)

// startServe builds serve with app.New from env and runs it until the test
// ends or stop is called; it returns the admin address (the reconciler's
// public port serves only the probes, which the admin port serves too), and stop returns
// Run's error and fails the test if Run does not return in time.
func startServe(t *testing.T, env map[string]string) (addr string, stop func() error) {
	t.Helper()
	loaded, err := config.LoadFrom[app.Config](func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, loaded.Value, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		cancel()
		t.Fatalf("New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	stop = func() error {
		t.Helper()
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			t.Fatal("serve did not stop within 15 s of cancellation")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	openapitest.Routes(t, "reconciler", a.Routes())
	return a.AdminAddr(), stop
}

// get returns the status and body of GET http://addr+path; status 0 when
// nothing answers.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	c := openapitest.Client(t, "reconciler", nil)
	c.Timeout = 5 * time.Second
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of the sample line starting with series
// (name plus labels) in a Prometheus text exposition, or -1.
func metric(exposition, series string) float64 {
	for line := range strings.SplitSeq(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

func TestServeReconcilesUnderTheLease(t *testing.T) {
	t.Parallel()
	sqsClient := sqstest.Client(t)
	db := reconcilertest.NewDB(t)
	seed(t, db)
	env := testEnv(t, db)
	env["RECONCILER_INTERVAL"] = "1h" // one run, at start
	dlq, dlqURL := sqstest.Queue(t, sqsClient, "reconciler-dlq", 5)
	if _, err := sqsClient.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	env["RECONCILER_DEAD_LETTER_QUEUES"] = dlq

	addr, stop := startServe(t, env)
	testwait.Until(t, 15*time.Second, 50*time.Millisecond, "a finished run", func() bool {
		runs := db.Runs(t)
		return len(runs) == 1 && runs[0].Finished
	})
	if runs := db.Runs(t); runs[0] != (reconcilertest.Run{Part: "sweep", Checked: 4, Republished: 2, Finished: true}) {
		t.Errorf("run = %+v", runs[0])
	}
	if due := db.Due(t); len(due) != 2 {
		t.Errorf("ingest's outbox has %v due again, want the 2 missing documents' events", due)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if status, body := get(t, addr, path); status != http.StatusOK {
			t.Errorf("GET %s = %d %s, want 200", path, status, body)
		}
	}
	_, body := get(t, addr, "/metrics")
	for series, want := range map[string]float64{
		`onceflow_reconciler_runs_total{outcome="ok"}`:    1,
		`onceflow_reconciler_republished_total`:           2,
		`onceflow_reconciler_missing_events_total`:        1,
		`onceflow_reconciler_runs_total{outcome="error"}`: 0,
	} {
		if got := metric(body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	testwait.Until(t, 10*time.Second, 50*time.Millisecond, "the dead-letter queue's depth in /metrics", func() bool {
		_, body := get(t, addr, "/metrics")
		return metric(body, `onceflow_dead_letter_messages{queue="`+dlq+`"}`) == 1
	})
	if metric(body, "onceflow_reconciler_last_run_timestamp_seconds") < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Error("onceflow_reconciler_last_run_timestamp_seconds is not recent")
	}
	if !leaseHeld(t, db) {
		t.Error("the reconciler lease is not held while serving")
	}

	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if leaseHeld(t, db) {
		t.Error("the reconciler lease is still held after shutdown")
	}
	if status, _ := get(t, addr, "/healthz"); status != 0 {
		t.Errorf("GET /healthz after shutdown = %d, want no answer", status)
	}
}

func TestServeStandsByWhileAnotherHoldsTheLease(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	seed(t, db)
	env, ingest := testEnvIngest(t, db)
	env["RECONCILER_INTERVAL"] = "100ms"
	db.Exec(t, `INSERT INTO reconciler.leases (name, holder, token, expires_at)
VALUES ($1, 'another-instance', 7, now() + interval '1 hour')`, app.LeaseName)

	addr, stop := startServe(t, env)
	testwait.Until(t, 15*time.Second, 50*time.Millisecond, "two skipped ticks", func() bool {
		_, body := get(t, addr, "/metrics")
		return metric(body, `onceflow_reconciler_runs_total{outcome="skipped"}`) >= 2
	})
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if runs := db.Runs(t); len(runs) != 0 {
		t.Errorf("a standby reconciled: runs = %+v", runs)
	}
	if n := ingest.Hits(); n != 0 {
		t.Errorf("a standby asked ingest %d times to announce events again", n)
	}
}

// leaseHeld reports whether the reconciler lease is held and unexpired.
func leaseHeld(t *testing.T, db *reconcilertest.DB) bool {
	t.Helper()
	var held bool
	err := db.Pool.QueryRow(context.Background(),
		`SELECT coalesce(bool_or(expires_at > now()), false) FROM reconciler.leases WHERE name = $1`, app.LeaseName).Scan(&held)
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// The audit loop starts its first run as soon as the sweep loop takes the
// lease, not an interval later: with an interval of an hour, an audit run
// is recorded (failed here, on a provider that refuses) within seconds.
func TestServeAuditsOnceItTakesTheLease(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	seed(t, db)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the provider is down for this test", http.StatusServiceUnavailable)
	}))
	t.Cleanup(provider.Close)
	env := auditEnv(testEnv(t, db), provider.URL)
	env["RECONCILER_INTERVAL"] = "1h"
	_, stop := startServe(t, env)
	testwait.Until(t, 15*time.Second, 50*time.Millisecond, "an audit run within the first interval", func() bool {
		return slices.ContainsFunc(db.Runs(t), func(r reconcilertest.Run) bool { return r.Part == "audit" && r.Finished })
	})
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// auditEnv adds to env the settings of an audit of the provider at url.
func auditEnv(env map[string]string, url string) map[string]string {
	for k, v := range map[string]string{
		"RECONCILER_AUDIT": "on", "RECONCILER_PROVIDER_TIMEOUT": "1m",
		"INVOICY_BASE_URL": url + "/InvoiCy/", "INVOICY_EMP_CODIGO": reconcilertest.EmpCodigo,
		"INVOICY_EMP_PK": reconcilertest.EmpPK, "INVOICY_ACCESS_KEY": reconcilertest.AccessKey,
	} {
		env[k] = v
	}
	return env
}

// A listing that takes long holds back neither the sweep nor the lease:
// serve audits in a loop of its own, and records the audit's run apart.
func TestServeSweepsWhileAnAuditWaits(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	seed(t, db)
	asked, answer := make(chan struct{}, 1), make(chan struct{})
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select {
		case <-answer:
		case <-r.Context().Done():
		}
		http.Error(w, "the provider is down for this test", http.StatusServiceUnavailable)
	}))
	t.Cleanup(provider.Close)
	env := auditEnv(testEnv(t, db), provider.URL)
	env["RECONCILER_INTERVAL"] = "100ms"
	addr, stop := startServe(t, env)
	release := sync.OnceFunc(func() { close(answer) })
	t.Cleanup(release) // before stop, which would wait for the audit in hand

	select {
	case <-asked:
	case <-time.After(15 * time.Second):
		t.Fatal("the audit did not ask the provider within 15 s")
	}
	swept := func(runs []reconcilertest.Run) (n int) {
		for _, r := range runs {
			if r.Part == "sweep" && r.Finished && r.Error == nil {
				n++
			}
		}
		return n
	}
	before := swept(db.Runs(t))
	testwait.Until(t, 15*time.Second, 50*time.Millisecond, "three more sweeps while the audit waits", func() bool {
		return swept(db.Runs(t)) >= before+3
	})
	audits := slices.DeleteFunc(db.Runs(t), func(r reconcilertest.Run) bool { return r.Part != "audit" })
	if len(audits) != 1 || audits[0].Finished {
		t.Errorf("audit runs = %+v, want one, still waiting for the provider", audits)
	}
	if !leaseHeld(t, db) {
		t.Error("the reconciler lease lapsed while the audit waited")
	}
	if status, body := get(t, addr, "/healthz"); status != http.StatusOK {
		t.Errorf("GET /healthz while the audit waits = %d %s, want 200", status, body)
	}

	release()
	testwait.Until(t, 15*time.Second, 50*time.Millisecond, "the audit's run to fail on the provider's refusal", func() bool {
		runs := db.Runs(t)
		return slices.ContainsFunc(runs, func(r reconcilertest.Run) bool { return r.Part == "audit" && r.Finished && r.Error != nil })
	})
	_, body := get(t, addr, "/metrics")
	if got := metric(body, "onceflow_reconciler_last_audit_timestamp_seconds"); got != 0 {
		t.Errorf("last audit gauge = %v after a failed audit, want 0", got)
	}
	if got := metric(body, "onceflow_reconciler_last_run_timestamp_seconds"); got < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last run gauge = %v, want recent: the sweeps succeeded", got)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
}
