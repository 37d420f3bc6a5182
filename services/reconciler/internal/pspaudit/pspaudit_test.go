package pspaudit_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/services/reconciler/internal/pspaudit"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

type noSweep struct{}

func (noSweep) Run(context.Context, *store.Store) (sweep.Result, error) { return sweep.Result{}, nil }

// ledger stands for ingest's admin API: the PSP's payments it lists, and
// the recoveries asked of it.
type ledger struct {
	held      []pspaudit.Payment
	refunds   []pspaudit.Refund
	from, to  time.Time
	recovered []string
}

func (l *ledger) Payments(_ context.Context, from, to time.Time) ([]pspaudit.Payment, error) {
	l.from, l.to = from, to
	return l.held, nil
}

func (l *ledger) Refunds(context.Context, time.Time, time.Time) ([]pspaudit.Refund, error) {
	return l.refunds, nil
}

func (l *ledger) Recover(_ context.Context, psp, kind, id string) (bool, error) {
	l.recovered = append(l.recovered, psp+":"+kind+":"+id)
	return true, nil
}

func succeeded(id, payment string, amount int64) pspaudit.Refund {
	return pspaudit.Refund{PSP: "dlocal", ID: id, PaymentID: payment, Status: "SUCCESS", AmountMinor: amount, Currency: "UYU"}
}

func paid(id, order string, amount int64) pspaudit.Payment {
	return pspaudit.Payment{PSP: "dlocal", ID: id, Status: "PAID", AmountMinor: amount, Currency: "UYU", OrderID: order}
}

// Against ingest's real tables: a payment that took money (or a
// successful refund) and that ingest
// never recorded (or recorded in an earlier status) is sent back through
// the webhook path when its order is known; with its order unknown it is a
// finding and an audit_disagreement case; recorded money that differs is a
// finding; a payment that took no money, or one recorded as the PSP holds
// it, is left alone. A second run sees the same and opens no second case.
func TestPSPAuditRecoversOrReports(t *testing.T) {
	db := reconcilertest.NewDB(t)
	now := time.Now()
	db.Payment(t, "pay-known", now)          // recorded PAID, order order-pay-known
	db.Payment(t, "pay-behind", time.Time{}) // recorded PENDING
	db.Payment(t, "pay-amount", now)
	l := &ledger{held: []pspaudit.Payment{
		paid("pay-known", "order-pay-known", 12200),
		paid("pay-behind", "order-pay-behind", 12200),
		paid("pay-lost", "order-pay-known", 12200), // a second payment whose webhook was lost
		paid("pay-nowhere", "o-none", 9900),
		paid("pay-amount", "order-pay-amount", 12300),
		{PSP: "dlocal", ID: "pay-pending", Status: "PENDING", AmountMinor: 500, Currency: "UYU", OrderID: "o-none"},
	}, refunds: []pspaudit.Refund{
		succeeded("ref-known", "pay-known", 5000),
		succeeded("ref-lost", "pay-known", 2000),    // its notification was lost
		succeeded("ref-orphan", "pay-nowhere", 100), // of a payment ingest never recorded
	}}
	db.Refund(t, "ref-known", "pay-known", now)
	a := pspaudit.New(l, store.NewIngestReader(db.Pool), pspaudit.Config{Window: 48 * time.Hour, Settle: 15 * time.Minute},
		zaptest.NewLogger(t), prometheus.NewRegistry())
	r := reconcile.New(store.New(db.Pool), reconcile.Parts{Sweep: noSweep{}, Audits: []reconcile.Checker{a}}, zaptest.NewLogger(t), reconcile.NewMetrics(prometheus.NewRegistry(), true))
	for run := 1; run <= 2; run++ {
		l.recovered = nil
		sum, err := r.Once(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"dlocal:payment:pay-behind", "dlocal:payment:pay-lost", "dlocal:refund:ref-lost"}; !slices.Equal(l.recovered, want) {
			t.Fatalf("run %d recovered %v, want %v", run, l.recovered, want)
		}
		if sum.Findings != 3 {
			t.Fatalf("run %d: %d findings, want 3", run, sum.Findings)
		}
	}
	if got := l.to.Sub(l.from); got != 48*time.Hour-15*time.Minute {
		t.Fatalf("period %v to %v, want the 48h window ending 15m ago", l.from, l.to)
	}
	var subjects []string
	rows, err := db.Pool.Query(t.Context(), "SELECT subject FROM reconciler.cases WHERE kind = 'audit_disagreement' AND closed_at IS NULL ORDER BY subject")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, s)
	}
	want := []string{"audit:psp_audit_amount_mismatch:dlocal:pay-amount", "audit:psp_audit_unknown_order:dlocal:pay-nowhere",
		"audit:psp_audit_unknown_payment:dlocal:ref-orphan"}
	if !slices.Equal(subjects, want) {
		t.Fatalf("open cases %v, want %v", subjects, want)
	}
}
