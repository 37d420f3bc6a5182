package app_test

// Component tests: the real binary's subcommands (app.Spec through
// service.Main, as main runs them) and its serve (app.New, App.Run) against a
// real PostgreSQL and SQS, each configured by its own environment map, so
// they run in parallel.

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/pkg/sqstest"
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

// testEnv configures the reconciler for db and the billing queue, with every
// other setting at its default; of the process environment it takes only
// where the SQS emulator is.
func testEnv(db *reconcilertest.DB, queue string) map[string]string {
	return map[string]string{
		"DATABASE_URL": db.DSN, "RECONCILER_BILLING_QUEUE": queue, "LOG_LEVEL": "error", "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0",
		"RECONCILER_INTERVAL": "1m", "RECONCILER_GRACE": "10m",
		"RECONCILER_PAGE_SIZE": "500", "RECONCILER_MAX_PER_RUN": "5000", "RECONCILER_AUDIT": "off",
		"AWS_ENDPOINT_URL_SQS": os.Getenv("AWS_ENDPOINT_URL_SQS"), "AWS_REGION": os.Getenv("AWS_REGION"),
	}
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
	sqsClient := sqstest.Client(t)
	db := reconcilertest.NewDB(t)
	seed(t, db)
	name, url := sqstest.Queue(t, sqsClient, "reconciler-app", 5)
	out := runTwiceAtOnce(t, testEnv(db, name)) // by name: run-once resolves it to a URL

	if want := summary + "\n" + summary + "\n"; out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	want := reconcilertest.Run{Checked: 4, Republished: 2, Finished: true}
	runs := db.Runs(t)
	if len(runs) != 2 || runs[0] != want || runs[1] != want {
		t.Errorf("runs = %+v, want two of %+v", runs, want)
	}
	// Neither run records documents, so each sends both events: the invoicer
	// records each once whatever the count.
	perKey := map[string]int{}
	for _, m := range reconcilertest.Receive(t, sqsClient, url, 4) {
		perKey[m.Attrs["event_key"]]++
	}
	if len(perKey) != 2 || perKey["payment:p-missing:paid"] != 2 || perKey["refund:r1:succeeded"] != 2 {
		t.Errorf("messages per event key = %v, want payment:p-missing:paid and refund:r1:succeeded twice each", perKey)
	}
}

// TestRunOnceTwiceAtOnceWithTheAudit runs two run-once at the same time with
// the provider audit on: both exit cleanly, each sees the provider's extra
// document and our lost one, and they are recorded once each.
func TestRunOnceTwiceAtOnceWithTheAudit(t *testing.T) {
	t.Parallel()
	sqsClient := sqstest.Client(t)
	db := reconcilertest.NewDB(t)
	seed(t, db)
	fis := reconcilertest.NewFiscal(t)
	today := time.Now()
	if err := fis.Emit("p-provider-only", 12200, today); err != nil {
		t.Fatal(err)
	}
	db.IssuedInvoice(t, "p-lost", "authorized", 12200, nil)
	name, _ := sqstest.Queue(t, sqsClient, "reconciler-app", 5)
	env := testEnv(db, name)
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
	sqsClient := sqstest.Client(t)
	db := reconcilertest.NewDB(t)
	seed(t, db)
	_, url := sqstest.Queue(t, sqsClient, "reconciler-app", 5)
	_, err := runMain(testEnv(db, url+"-gone"), "run-once") // a URL is used as is, so the send fails
	if err == nil {
		t.Fatal("run-once succeeded sending to a missing queue")
	}
	runs := db.Runs(t)
	if len(runs) != 1 || !runs[0].Finished || runs[0].Error == nil || !strings.Contains(*runs[0].Error, "send") {
		t.Errorf("runs = %+v, want one finished run with the send error", runs)
	}
}

func TestRunOnceUnknownQueue(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	_, err := runMain(testEnv(db, "reconciler-no-such-queue"), "run-once")
	if err == nil || !strings.Contains(err.Error(), "RECONCILER_BILLING_QUEUE") {
		t.Fatalf("run-once = %v, want an error naming RECONCILER_BILLING_QUEUE", err)
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t) // already migrated: migrate must be a no-op
	env := testEnv(db, "unused")
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
