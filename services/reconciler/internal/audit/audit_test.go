package audit_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/reconciler/internal/audit"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

type noSweep struct{}

func (noSweep) Run(context.Context, *store.Store) (sweep.Result, error) { return sweep.Result{}, nil }

// env is one test's database and fiscal sandbox.
type env struct {
	db  *reconcilertest.DB
	fis *reconcilertest.Fiscal
	loc *time.Location
}

func newEnv(t *testing.T) *env {
	t.Helper()
	loc, err := time.LoadLocation("America/Montevideo")
	if err != nil {
		t.Fatal(err)
	}
	return &env{db: reconcilertest.NewDB(t), fis: reconcilertest.NewFiscal(t), loc: loc}
}

// reconciler runs the audit of provider p (yesterday and today) alone.
func (e *env) reconciler(t *testing.T, p audit.Provider) *reconcile.Reconciler {
	// Small pages: paging is exercised. Every day is listed on every run.
	a := audit.New(p, store.NewInvoicerReader(e.db.Pool), store.New(e.db.Pool),
		audit.Config{Provider: "invoicy", Days: 2, Location: e.loc, PageSize: 2}, audit.NewMetrics(prometheus.NewRegistry()))
	return reconcile.New(store.New(e.db.Pool), reconcile.Parts{Sweep: noSweep{}, Audits: []reconcile.Checker{a}}, zaptest.NewLogger(t), reconcile.NewMetrics(prometheus.NewRegistry(), true))
}

var ref = reconcilertest.InvoiceReference

// day is the Montevideo calendar day daysAgo days before today.
func (e *env) day(daysAgo int) time.Time { return time.Now().In(e.loc).AddDate(0, 0, -daysAgo) }

// emit has the sandbox issue payment's invoice for totalMinor, dated
// daysAgo days ago.
func (e *env) emit(t *testing.T, payment string, totalMinor int64, daysAgo int) {
	t.Helper()
	if err := e.fis.Emit(payment, totalMinor, e.day(daysAgo)); err != nil {
		t.Fatalf("emit %s: %v", payment, err)
	}
}

// duplicate has the sandbox store the invoice of payment twice under its
// reference; the adapter answers that the outcome is ambiguous.
func (e *env) duplicate(t *testing.T, payment string) {
	t.Helper()
	e.fis.Sandbox.SetRule(ref(payment), fiscalsim.Rule{Duplicate: true})
	err := e.fis.Emit(payment, 12200, e.day(0))
	if n := e.fis.Sandbox.CountByReference(ref(payment)); !errors.Is(err, fiscal.ErrAmbiguous) || n != 2 {
		t.Fatalf("emit with duplicates = %v, %d documents; want ambiguous and 2", err, n)
	}
}

// record writes payment's invoice as the invoicer holds it, issued daysAgo
// days ago (Montevideo), or without an issue date when daysAgo is negative.
func (e *env) record(t *testing.T, payment, status string, amountMinor int64, daysAgo int) {
	t.Helper()
	var issued *time.Time
	if daysAgo >= 0 {
		y, m, d := e.day(daysAgo).Date()
		day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		issued = &day
	}
	e.db.IssuedInvoice(t, payment, status, amountMinor, issued)
}

// open returns the open findings as "kind reference" lines, sorted.
func (e *env) open(t *testing.T) []string {
	t.Helper()
	rows, err := store.New(e.db.Pool).OpenFindings(t.Context(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.Kind+" "+r.Reference)
	}
	slices.Sort(out)
	return out
}

func sorted(lines ...string) []string {
	slices.Sort(lines)
	return lines
}

// seed writes one case of every finding kind, and documents that agree or
// are not the audit's business.
func seed(t *testing.T, e *env) {
	e.emit(t, "p-here", 12200, 0) // the provider's only
	e.record(t, "p-there", "authorized", 12200, 0)
	e.record(t, "p-undated", "pending_dgi", 12200, -1) // acknowledged, created today, lost
	e.duplicate(t, "p-dup")
	e.record(t, "p-dup", "authorized", 12200, 0)
	e.fis.Sandbox.SetRule(ref("p-state"), fiscalsim.Rule{Reject: true})
	e.emit(t, "p-state", 12200, 0)
	e.record(t, "p-state", "authorized", 12200, 0)
	e.emit(t, "p-amount", 12200, 0)
	e.record(t, "p-amount", "authorized", 15000, 0)

	e.emit(t, "p-ok", 12200, 0)
	e.record(t, "p-ok", "authorized", 12200, 0)
	e.emit(t, "p-dgi", 12200, 0) // the invoicer's DGI polling has not caught up
	e.record(t, "p-dgi", "pending_dgi", 12200, 0)
	e.record(t, "p-inflight", "pending", 12200, -1)    // not sent yet
	e.record(t, "p-last-week", "authorized", 12200, 7) // outside the period
	e.record(t, "p-yesterday", "authorized", 12200, 1) // inside the period and held
	e.emit(t, "p-yesterday", 12200, 1)
}

func TestAuditFindsEachDisagreementOnceAndClosesWhatIsResolved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seed(t, e)
	r := e.reconciler(t, e.fis.Client)
	want := sorted(
		"audit_missing_here "+ref("p-here"),
		"audit_missing_there "+ref("p-there"),
		"audit_missing_there "+ref("p-undated"),
		"audit_duplicate "+ref("p-dup"),
		"audit_state_mismatch "+ref("p-state"),
		"audit_amount_mismatch "+ref("p-amount"),
	)
	for run := 1; run <= 2; run++ {
		sum, err := r.Once(t.Context())
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if got := e.open(t); sum.Findings != 6 || !slices.Equal(got, want) {
			t.Fatalf("run %d saw %d findings; open:\n%s\nwant:\n%s", run, sum.Findings, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	// The missing document appears at each side, the local rows are
	// corrected: the next run closes those four and keeps the others.
	e.record(t, "p-here", "authorized", 12200, 0)
	e.emit(t, "p-there", 12200, 0)
	e.db.Exec(t, `UPDATE invoicer.fiscal_documents SET status = 'rejected' WHERE source_ref = 'p-state'`)
	e.db.Exec(t, `UPDATE invoicer.fiscal_documents SET amount_minor = 12200 WHERE source_ref = 'p-amount'`)
	sum, err := r.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	left := sorted("audit_duplicate "+ref("p-dup"), "audit_missing_there "+ref("p-undated"))
	if got := e.open(t); sum.Closed != 4 || sum.Findings != 2 || !slices.Equal(got, left) {
		t.Fatalf("after the fixes: seen %d, closed %d, open %v; want 2 seen, 4 closed, open %v", sum.Findings, sum.Closed, got, left)
	}
}

func TestAuditFindingsSayWhatDiffersWithoutBuyerData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.emit(t, "p-amount", 12200, 0)
	e.record(t, "p-amount", "authorized", 15000, 0)
	e.fis.Sandbox.SetRule(ref("p-state"), fiscalsim.Rule{Reject: true})
	e.emit(t, "p-state", 12200, 0)
	e.record(t, "p-state", "authorized", 12200, 0)
	if _, err := e.reconciler(t, e.fis.Client).Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, err := store.New(e.db.Pool).OpenFindings(t.Context(), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	details := map[string]string{}
	for _, r := range rows {
		details[r.Kind] = r.Detail
	}
	for kind, parts := range map[string][]string{
		audit.AmountMismatch: {"payment p-amount", "150.00 UYU", "122.00 UYU"},
		audit.StateMismatch:  {"payment p-state", "authorized", "rejected", `"3"`},
	} {
		for _, p := range parts {
			if !strings.Contains(details[kind], p) {
				t.Errorf("%s detail %q lacks %q", kind, details[kind], p)
			}
		}
	}
}

func TestAFailingAuditClosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.emit(t, "p-here", 12200, 0)
	e.record(t, "p-there", "authorized", 12200, 0)
	if _, err := e.reconciler(t, e.fis.Client).Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := e.open(t)
	if len(before) != 2 {
		t.Fatalf("open findings = %v, want missing here and missing there", before)
	}

	gone := httptest.NewServer(e.fis.Sandbox)
	gone.Close() // a provider that does not answer
	sum, err := e.reconciler(t, reconcilertest.InvoiCy(t, gone.URL+"/InvoiCy/")).Once(t.Context())
	if err == nil || !strings.Contains(err.Error(), "audit") {
		t.Fatalf("run against an unreachable provider = %v, want an audit error", err)
	}
	if after := e.open(t); sum.Closed != 0 || !slices.Equal(after, before) {
		t.Fatalf("a failed audit closed findings: closed %d, open %v, want %v", sum.Closed, after, before)
	}
}

func TestPeriodIsMontevideoCalendarDays(t *testing.T) {
	t.Parallel()
	loc, err := time.LoadLocation("America/Montevideo")
	if err != nil {
		t.Fatal(err)
	}
	a := audit.New(nil, nil, nil, audit.Config{Days: 2, Location: loc, PageSize: 1}, nil)
	// 02:00 UTC on 30 November is still 29 November in Montevideo (UTC-3).
	from, to := a.Period(time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC))
	if got := from.Format(time.DateOnly) + ".." + to.Format(time.DateOnly); got != "2026-11-28..2026-11-29" {
		t.Fatalf("period = %s, want 2026-11-28..2026-11-29", got)
	}
}
