package audit_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/reconciler/internal/audit"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// The schedule the tests below audit on: the defaults of the settings.
const (
	currentEvery = 10 * time.Minute
	pastEvery    = 6 * time.Hour
)

// scheduled is an auditor on the default schedule, with its registry.
type scheduled struct {
	*audit.Auditor
	reg *prometheus.Registry
}

func (e *env) scheduled(t *testing.T) scheduled {
	t.Helper()
	reg := prometheus.NewRegistry()
	a := audit.New(e.fis.Client, store.NewInvoicerReader(e.db.Pool), store.New(e.db.Pool), audit.Config{
		Provider: "invoicy", Days: 2, Location: e.loc, PageSize: 50, CurrentEvery: currentEvery, PastEvery: pastEvery,
	}, audit.NewMetrics(reg))
	return scheduled{Auditor: a, reg: reg}
}

// counter returns the value of the counter name in reg.
func counter(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	tb.Helper()
	v, ok := reconcilertest.Metric(tb, reg, name)
	if !ok {
		tb.Fatalf("no counter %s", name)
	}
	return v
}

// run audits at now and returns the findings as sorted "kind reference"
// lines, and how many days it listed in full.
func (s scheduled) run(t *testing.T, now time.Time) (found []string, daysListed int) {
	t.Helper()
	before := counter(t, s.reg, "onceflow_reconciler_audit_days_listed_total")
	got, err := s.Run(t.Context(), now)
	if err != nil {
		t.Fatalf("audit at %s: %v", now.Format(time.TimeOnly), err)
	}
	for _, f := range got {
		found = append(found, f.Kind+" "+f.Reference)
	}
	slices.Sort(found)
	return found, int(counter(t, s.reg, "onceflow_reconciler_audit_days_listed_total") - before)
}

// noon is today's noon in Montevideo: the schedule's steps from it stay
// within the day.
func (e *env) noon() time.Time {
	y, m, d := e.day(0).Date()
	return time.Date(y, m, d, 12, 0, 0, 0, e.loc)
}

// TestAProviderOnlyDocumentOnAnAuditedDayIsFoundWithinTheBound: once both
// days are listed and agree, a document issued at the provider alone is
// found by the next full listing of its day: within CurrentEvery when it is
// dated today, within PastEvery when dated yesterday (docs/reconciler-audit.md).
func TestAProviderOnlyDocumentOnAnAuditedDayIsFoundWithinTheBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for daysAgo, payment := range []string{"p-today", "p-yesterday"} {
		e.emit(t, payment, 12200, daysAgo)
		e.record(t, payment, "authorized", 12200, daysAgo)
	}
	a := e.scheduled(t)
	start := e.noon()
	if found, listed := a.run(t, start); len(found) != 0 || listed != 2 {
		t.Fatalf("first audit: findings %v, %d days listed; want none and both days", found, listed)
	}
	e.emit(t, "p-late-today", 12200, 0) // nobody asked for either
	e.emit(t, "p-late-yesterday", 12200, 1)

	steps := []struct {
		after  time.Duration
		listed int
		want   []string
	}{
		{time.Minute, 0, nil}, // nothing of ours changed: no listing at all
		{currentEvery, 1, []string{"audit_missing_here " + ref("p-late-today")}},
		{currentEvery + time.Minute, 1, []string{"audit_missing_here " + ref("p-late-today")}}, // today has a disagreement: listed again
		{pastEvery, 2, []string{"audit_missing_here " + ref("p-late-today"), "audit_missing_here " + ref("p-late-yesterday")}},
	}
	for _, s := range steps {
		found, listed := a.run(t, start.Add(s.after))
		if listed != s.listed || !slices.Equal(found, sorted(s.want...)) {
			t.Errorf("audit %s after the first: %d days listed, findings %v; want %d, %v", s.after, listed, found, s.listed, s.want)
		}
	}
}

// TestChangedDocumentsAreCheckedOnTheNextRunWithoutAListing: between full
// listings, our documents that changed are looked up by reference, so one
// the provider lacks, or holds for another amount, is found on the next
// run; its day is then listed on every run until it agrees.
func TestChangedDocumentsAreCheckedOnTheNextRunWithoutAListing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.emit(t, "p-ok", 12200, 0)
	e.record(t, "p-ok", "authorized", 12200, 0)
	e.emit(t, "p-amount", 12200, 1)
	e.record(t, "p-amount", "authorized", 12200, 1)
	a := e.scheduled(t)
	if found, _ := a.run(t, time.Now()); len(found) != 0 {
		t.Fatalf("first audit: %v, want no findings", found)
	}
	// Each later run is a Settle after now: the changes made before it are
	// old enough to be looked up.
	settled := func() time.Time { return time.Now().Add(audit.Settle) }

	e.record(t, "p-lost", "authorized", 12200, 0) // acknowledged, the provider lacks it
	e.db.Exec(t, `UPDATE invoicer.fiscal_documents SET amount_minor = 15000 WHERE source_ref = 'p-amount'`)
	want := sorted("audit_missing_there "+ref("p-lost"), "audit_amount_mismatch "+ref("p-amount"))
	found, listed := a.run(t, settled())
	if listed != 0 || !slices.Equal(found, want) {
		t.Fatalf("audit after the changes: %d days listed, findings %v; want none listed, %v", listed, found, want)
	}
	if found, listed := a.run(t, settled()); listed != 2 || !slices.Equal(found, want) {
		t.Fatalf("next audit: %d days listed, findings %v; want both days listed, %v", listed, found, want)
	}

	e.emit(t, "p-lost", 12200, 0)
	e.db.Exec(t, `UPDATE invoicer.fiscal_documents SET amount_minor = 12200 WHERE source_ref = 'p-amount'`)
	if found, listed := a.run(t, settled()); listed != 2 || len(found) != 0 {
		t.Fatalf("audit after the fixes: %d days listed, findings %v; want both days listed, none", listed, found)
	}
	if found, listed := a.run(t, settled()); listed != 0 || len(found) != 0 {
		t.Fatalf("audit once both agree: %d days listed, findings %v; want none, none", listed, found)
	}
	if got := strings.Join(e.open(t), ","); got != "" {
		t.Fatalf("open findings %s: Run alone records none", got)
	}
}

// TestEachChangeIsLookedUpOnceAndALateCommitIsSeen: a run looks up our
// documents that changed from the previous run's mark until Settle before
// it, which becomes the next mark. A change stamped before a run and
// committed after it is still looked up by the next run, and no change is
// looked up twice, however close together the runs are.
func TestEachChangeIsLookedUpOnceAndALateCommitIsSeen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.emit(t, "p-late", 12200, 0)
	e.record(t, "p-late", "authorized", 12200, 0)
	a := e.scheduled(t)
	if found, listed := a.run(t, time.Now()); len(found) != 0 || listed != 2 {
		t.Fatalf("first audit: findings %v, %d days listed; want none and both days", found, listed)
	}
	// The change to p-late is stamped now and committed only after the
	// next run.
	tx, err := e.db.Pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), `UPDATE invoicer.fiscal_documents SET amount_minor = 15000 WHERE source_ref = 'p-late'`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"p-1", "p-2", "p-3"} {
		e.emit(t, p, 12200, 0)
		e.record(t, p, "authorized", 12200, 0)
	}
	lookedUp := func() int { return int(counter(t, a.reg, "onceflow_reconciler_audit_references_looked_up_total")) }

	before := lookedUp()
	if found, listed := a.run(t, time.Now()); len(found) != 0 || listed != 0 || lookedUp() != before {
		t.Fatalf("audit before the changes settled: findings %v, %d days listed, %d looked up; want none of each", found, listed, lookedUp()-before)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(audit.Settle)
	before = lookedUp()
	want := []string{"audit_amount_mismatch " + ref("p-late")}
	if found, _ := a.run(t, at); !slices.Equal(found, want) || lookedUp()-before != 4 {
		t.Fatalf("audit once settled: findings %v, %d looked up; want %v and the 4 changed documents", found, lookedUp()-before, want)
	}
	before = lookedUp()
	if _, _ = a.run(t, at.Add(time.Second)); lookedUp() != before {
		t.Fatalf("the next audit looked up %d documents again; want none", lookedUp()-before)
	}
}
