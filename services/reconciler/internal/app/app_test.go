package app_test

// Component tests: the real binary's subcommands (app.Spec through
// service.Main, as main runs them) and its serve (app.New, App.Run) against a
// real PostgreSQL and SQS, each configured by its own environment map, so
// they run in parallel.

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/reconciler/internal/app"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
)

// seed writes one of each case the sweep distinguishes: 3 old payments and 1
// old refund are checked; an invoice exists for p-invoiced only; the event
// of p-missing and of r1 is sent again; p-noevent has no outbox row;
// p-recent is inside the grace period.
func seed(tb testing.TB, db *reconcilertest.DB) {
	tb.Helper()
	old, recent := time.Now().Add(-time.Hour), time.Now().Add(-time.Minute)
	db.Payment(tb, "p-invoiced", old)
	db.Outbox(tb, reconcilertest.PaymentPaid("p-invoiced"))
	db.Invoice(tb, "p-invoiced")
	// Authorized long ago: outside the period the audit compares.
	db.Exec(tb, `UPDATE invoicer.fiscal_documents SET issue_date = '2000-01-01' WHERE source_ref = 'p-invoiced'`)
	db.Payment(tb, "p-missing", old)
	db.Outbox(tb, reconcilertest.PaymentPaid("p-missing"))
	db.Payment(tb, "p-noevent", old)
	db.Payment(tb, "p-recent", recent)
	db.Outbox(tb, reconcilertest.PaymentPaid("p-recent"))
	db.Refund(tb, "r1", "p-invoiced", old)
	db.Outbox(tb, reconcilertest.RefundSucceeded("r1"))
}

const summary = "reconcile: checked=4 missing=3 republished=2 missing_events=1 findings=0 closed=0"

// testEnv configures the reconciler for db and a stand-in of ingest's admin
// API over it, with every other setting at its default (the PSP audit off);
// of the process environment it takes only where the SQS emulator is.
func testEnv(tb testing.TB, db *reconcilertest.DB) map[string]string {
	env, _ := testEnvIngest(tb, db)
	return env
}

// testEnvIngest is testEnv and its stand-in of ingest's admin API.
func testEnvIngest(tb testing.TB, db *reconcilertest.DB) (map[string]string, *reconcilertest.Ingest) {
	ingest := reconcilertest.NewIngest(tb, db.Pool)
	return map[string]string{
		"DATABASE_URL": db.DSN, "LOG_LEVEL": "error", "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0",
		"RECONCILER_INTERVAL": "1m", "RECONCILER_GRACE": "10m",
		"RECONCILER_PAGE_SIZE": "500", "RECONCILER_MAX_PER_RUN": "5000", "RECONCILER_AUDIT": "off",
		"RECONCILER_INGEST_ADMIN_URL": ingest.URL, "RECONCILER_INGEST_ADMIN_TOKEN": reconcilertest.IngestAdminToken,
		"RECONCILER_PSP_AUDIT": "off",
		"AWS_ENDPOINT_URL_SQS": os.Getenv("AWS_ENDPOINT_URL_SQS"), "AWS_REGION": os.Getenv("AWS_REGION"),
	}, ingest
}

// runMain runs the subcommand args as the reconciler binary does, with the
// settings env holds, and returns what it wrote to stdout.
func runMain(env map[string]string, args ...string) (string, error) {
	var out bytes.Buffer
	err := service.Main(context.Background(), app.Spec, func(k string) string { return env[k] }, args, &out)
	return out.String(), err
}

// runTwiceAtOnce runs run-once twice at the same time and returns the two
// outputs one after the other.
func runTwiceAtOnce(t *testing.T, env map[string]string) string {
	t.Helper()
	outs := make(chan string, 2)
	for range 2 {
		go func() {
			out, err := runMain(env, "run-once")
			if err != nil {
				t.Errorf("run-once: %v", err)
			}
			outs <- out
		}()
	}
	return <-outs + <-outs
}

func TestRunOnceTwiceAtOnce(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	seed(t, db)
	env, ingest := testEnvIngest(t, db)
	out := runTwiceAtOnce(t, env)

	if want := summary + "\n" + summary + "\n"; out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	want := reconcilertest.Run{Part: "all", Checked: 4, Republished: 2, Finished: true}
	runs := db.Runs(t)
	if len(runs) != 2 || runs[0] != want || runs[1] != want {
		t.Errorf("runs = %+v, want two of %+v", runs, want)
	}
	// Neither run records documents, so each asks ingest for both events:
	// the invoicer records each once whatever the count.
	if due, want := db.Due(t), []string{"payment:p-missing:paid", "refund:r1:succeeded"}; !slices.Equal(due, want) {
		t.Errorf("ingest's outbox has %v due again, want %v", due, want)
	}
	if n := ingest.Hits(); n != 4 {
		t.Errorf("ingest was asked %d times, want 4: by each run, once for the payments (p-missing's event and p-noevent's, which it reports unknown) and once for the refund", n)
	}
}

// TestRunOnceTwiceAtOnceWithTheAudit runs two run-once at the same time with
// the provider audit on: both exit cleanly, each sees the provider's extra
// document and our lost one, and they are recorded once each.
func TestRunOnceTwiceAtOnceWithTheAudit(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	seed(t, db)
	fis := reconcilertest.NewFiscal(t)
	today := time.Now().In(fiscal.Montevideo) // the audited days are Montevideo's, whatever the hour in UTC
	if err := fis.Emit("p-provider-only", 12200, today); err != nil {
		t.Fatal(err)
	}
	db.IssuedInvoice(t, "p-lost", "authorized", 12200, nil)
	env := testEnv(t, db)
	for k, v := range map[string]string{
		"RECONCILER_AUDIT": "", "INVOICY_BASE_URL": fis.BaseURL, // on, because the provider is named
		"INVOICY_EMP_CODIGO": reconcilertest.EmpCodigo, "INVOICY_EMP_PK": reconcilertest.EmpPK, "INVOICY_ACCESS_KEY": reconcilertest.AccessKey,
	} {
		env[k] = v
	}

	out := runTwiceAtOnce(t, env)

	line := "reconcile: checked=4 missing=3 republished=2 missing_events=1 findings=2 closed=0\n"
	if out != line+line {
		t.Errorf("stdout = %q, want twice %q", out, line)
	}
	var open []string
	rows, err := db.Pool.Query(t.Context(), `SELECT kind || ' ' || reference FROM reconciler.findings WHERE closed_at IS NULL ORDER BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	want := []string{"audit_missing_here " + reconcilertest.InvoiceReference("p-provider-only"), "audit_missing_there " + reconcilertest.InvoiceReference("p-lost")}
	if strings.Join(open, "\n") != strings.Join(want, "\n") {
		t.Errorf("open findings = %q, want %q", open, want)
	}
	// Each disagreement is also an audit_disagreement case, once.
	var cases []string
	rows, err = db.Pool.Query(t.Context(), `SELECT subject FROM reconciler.cases
WHERE kind = 'audit_disagreement' AND closed_at IS NULL ORDER BY subject`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, s)
	}
	wantCases := []string{"audit:" + strings.ReplaceAll(want[0], " ", ":"), "audit:" + strings.ReplaceAll(want[1], " ", ":")}
	if strings.Join(cases, "\n") != strings.Join(wantCases, "\n") {
		t.Errorf("open audit_disagreement cases = %q, want %q", cases, wantCases)
	}
}

func TestRunOnceRecordsAFailedRun(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	seed(t, db)
	env := testEnv(t, db)
	env["RECONCILER_INGEST_ADMIN_TOKEN"] = "not-ingests-token" // ingest answers 401, which ends the run
	_, err := runMain(env, "run-once")
	if err == nil {
		t.Fatal("run-once succeeded although ingest refused it")
	}
	runs := db.Runs(t)
	if len(runs) != 1 || !runs[0].Finished || runs[0].Error == nil || !strings.Contains(*runs[0].Error, "republish") {
		t.Errorf("runs = %+v, want one finished run with the republish error", runs)
	}
}

// Without ingest's admin address the sweep could not repair anything: the
// reconciler refuses to start and names the variable.
func TestRunOnceWithoutIngestAdminURL(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	env := testEnv(t, db)
	delete(env, "RECONCILER_INGEST_ADMIN_URL")
	_, err := runMain(env, "run-once")
	if err == nil || !strings.Contains(err.Error(), "RECONCILER_INGEST_ADMIN_URL") {
		t.Fatalf("run-once = %v, want an error naming RECONCILER_INGEST_ADMIN_URL", err)
	}
	if runs := db.Runs(t); len(runs) != 0 {
		t.Errorf("runs = %+v, want none", runs)
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t) // already migrated: migrate must be a no-op
	env := testEnv(t, db)
	for range 2 {
		if _, err := runMain(env, "migrate"); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	db.Exec(t, `SELECT 'reconciler.runs'::regclass`)
}

func TestUnknownSubcommand(t *testing.T) {
	t.Parallel()
	_, err := runMain(nil, "reconcile-everything")
	if err == nil || !strings.Contains(err.Error(), "run-once") {
		t.Fatalf("Main = %v, want an error listing run-once", err)
	}
}

// eventually polls cond until it holds or timeout passes.
