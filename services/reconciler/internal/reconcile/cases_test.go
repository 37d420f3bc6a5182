package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// disagreeing is an audit-like check whose findings are cases.
type disagreeing struct{}

func (disagreeing) Name() string     { return "audit" }
func (disagreeing) Kinds() []string  { return []string{"audit_amount_mismatch"} }
func (disagreeing) CaseKind() string { return "audit_disagreement" }
func (disagreeing) Run(context.Context, time.Time) ([]store.Finding, error) {
	return []store.Finding{{Kind: "audit_amount_mismatch", Reference: "42", Detail: "we hold 122.00; the provider 120.00"}}, nil
}

// A disagreement opens one case however many runs see it; once an operator
// acknowledges it, the next runs do not open it again.
func TestDisagreementsAreCasesAcknowledgedOnce(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	own := store.New(db.Pool)
	sw := sweepFunc(func(context.Context) (sweep.Result, error) { return sweep.Result{}, nil })
	r := reconcile.New(own, reconcile.Parts{Sweep: sw, Audits: []reconcile.Checker{disagreeing{}}}, zaptest.NewLogger(t), reconcile.NewMetrics(prometheus.NewRegistry(), true))
	ctx := context.Background()
	open := func() []store.Case {
		t.Helper()
		if _, err := r.Once(ctx); err != nil {
			t.Fatal(err)
		}
		cs, err := own.Cases(ctx, store.CaseFilter{Status: "open", Kind: "audit_disagreement", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	open()
	cs := open()
	if len(cs) != 1 || cs[0].Subject != "audit:audit_amount_mismatch:42" {
		t.Fatalf("open cases after two runs = %+v, want one", cs)
	}
	if _, err := own.CloseCase(ctx, cs[0].ID, "ana", "acknowledge", "credit note issued by hand"); err != nil {
		t.Fatal(err)
	}
	if cs := open(); len(cs) != 0 {
		t.Errorf("after acknowledge the next run opened %+v again", cs)
	}
}
