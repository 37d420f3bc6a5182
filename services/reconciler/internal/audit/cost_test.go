package audit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/services/reconciler/internal/audit"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// seedAgreeing has the sandbox issue n invoices, half dated yesterday and
// half today, and writes each as the invoicer holds it, last changed an
// hour ago: history the audit has seen.
func seedAgreeing(tb testing.TB, e *env, prefix string, n int) {
	tb.Helper()
	var g errgroup.Group
	g.SetLimit(8)
	payments, refs, days := make([]string, n), make([]string, n), make([]time.Time, n)
	series, numbers := make([]string, n), make([]int64, n)
	for i := range n {
		payments[i] = fmt.Sprintf("%s-%d", prefix, i)
		refs[i] = ref(payments[i])
		y, m, d := e.day(i % 2).Date()
		days[i] = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		g.Go(func() error {
			held, err := e.fis.Issue(payments[i], 12200, e.day(i%2))
			series[i], numbers[i] = held.Series, held.Number
			return err
		})
	}
	if err := g.Wait(); err != nil {
		tb.Fatalf("emit: %v", err)
	}
	e.db.Exec(tb, `INSERT INTO invoicer.fiscal_documents
  (source_kind, source_ref, kind, event_key, reference, cfe_type, status, amount_minor, currency, buyer, issue_date,
   provider_series, provider_number, created_at, updated_at, audit_changed_at)
SELECT 'payment', p, 'invoice', 'payment:' || p || ':paid', r, 101, 'authorized', 12200, 'UYU', '{}', d, s, n,
       now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
FROM unnest($1::text[], $2::text[], $3::date[], $4::text[], $5::bigint[]) AS s(p, r, d, s, n)`, payments, refs, days, series, numbers)
	e.db.Exec(tb, `ANALYZE invoicer.fiscal_documents`)
}

// cost is what one audit run read, from the audit's counters.
type cost struct{ daysListed, providerListed, lookedUp, oursRead int }

func (c cost) String() string {
	return fmt.Sprintf("days listed %d, provider documents listed %d, references looked up %d, our documents read %d",
		c.daysListed, c.providerListed, c.lookedUp, c.oursRead)
}

func costOf(tb testing.TB, reg *prometheus.Registry) cost {
	return cost{
		daysListed:     int(counter(tb, reg, "onceflow_reconciler_audit_days_listed_total")),
		providerListed: int(counter(tb, reg, "onceflow_reconciler_audit_provider_documents_listed_total")),
		lookedUp:       int(counter(tb, reg, "onceflow_reconciler_audit_references_looked_up_total")),
		oursRead:       int(counter(tb, reg, "onceflow_reconciler_audit_documents_read_total")),
	}
}

func (c cost) minus(d cost) cost {
	return cost{c.daysListed - d.daysListed, c.providerListed - d.providerListed, c.lookedUp - d.lookedUp, c.oursRead - d.oursRead}
}

// steadyRun audits once to catch up with the history, adds fresh agreeing
// documents at both sides, and returns what the next run read.
func steadyRun(t *testing.T, e *env, cfg audit.Config, fresh int) cost {
	t.Helper()
	reg := prometheus.NewRegistry()
	a := audit.New(e.fis.Client, store.NewInvoicerReader(e.db.Pool), store.New(e.db.Pool), cfg, audit.NewMetrics(reg))
	if _, err := a.Run(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range fresh {
		payment := fmt.Sprintf("fresh-%s-%d", cfg.Provider, i)
		e.issueOurs(t, payment)
	}
	before := costOf(t, reg)
	found, err := a.Run(context.Background(), time.Now().Add(audit.Settle))
	if err != nil || len(found) != 0 {
		t.Fatalf("steady run: %d findings, %v; want none", len(found), err)
	}
	return costOf(t, reg).minus(before)
}

// TestAuditRunCostDoesNotGrowWithHistory measures one steady-state audit
// run, after a run that saw the history and with 20 new documents since,
// at two history sizes: listing every day on every run (zero
// CurrentEvery and PastEvery, what the audit did before it kept
// reconciler.audit_days) reads the whole period at the provider and in
// our database; the default schedule reads only the new documents.
//
//	go test -run TestAuditRunCostDoesNotGrowWithHistory -v ./services/reconciler/internal/audit/
func TestAuditRunCostDoesNotGrowWithHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 22,000 documents")
	}
	const fresh = 20
	for _, n := range []int{2_000, 20_000} {
		t.Run(fmt.Sprintf("history=%d", n), func(t *testing.T) {
			e := newEnv(t)
			seedAgreeing(t, e, "h", n)
			base := audit.Config{Days: 2, Location: e.loc, PageSize: 500}
			every, scheduled := base, base
			every.Provider = "every-run"
			scheduled.Provider = "scheduled"
			scheduled.CurrentEvery, scheduled.PastEvery = currentEvery, pastEvery

			got := steadyRun(t, e, scheduled, fresh)
			t.Logf("default schedule: %s", got)
			if want := (cost{lookedUp: fresh, oursRead: fresh}); got != want {
				t.Errorf("default schedule read %s; want %s", got, want)
			}
			old := steadyRun(t, e, every, fresh)
			t.Logf("every day every run: %s", old)
			if all := n + 2*fresh; old.daysListed != 2 || old.providerListed != all || old.oursRead < all {
				t.Errorf("listing every run read %s; want 2 days, %d provider documents, at least %d of ours", old, all, all)
			}
		})
	}
}
