package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/reconciler/internal/audit"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// A paced audit waits after each answer until its documents fit the rate:
// at one document an hour, with 4 going at once, the second listing's wait
// would outlast the run's minute, so the run stops there with an error and
// records nothing; unpaced, or paced at a rate the minute allows, the same
// run lists both days and agrees.
func TestAPacedAuditWaitsForItsRate(t *testing.T) {
	e := newEnv(t)
	seedAgreeing(t, e, "paced", 40)
	run := func(rate float64) (*prometheus.Registry, []store.Finding, error) {
		reg := prometheus.NewRegistry()
		a := audit.New(e.fis.Client, store.NewInvoicerReader(e.db.Pool), store.New(e.db.Pool), audit.Config{
			Provider: "invoicy", Days: 2, Location: e.loc, PageSize: 50, NumberRange: 4, Rate: rate,
		}, audit.NewMetrics(reg))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		found, err := a.Run(ctx, time.Now())
		return reg, found, err
	}

	reg, _, err := run(1.0 / 3600)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("audit at one document an hour: %v; want an error naming the deadline its wait would pass", err)
	}
	if got := counter(t, reg, "onceflow_reconciler_audit_days_listed_total"); got != 0 {
		t.Errorf("the stopped run counted %v days listed; want 0", got)
	}
	if days, err := store.New(e.db.Pool).AuditDays(t.Context(), "invoicy", time.Time{}, time.Now().AddDate(1, 0, 0)); err != nil || len(days) != 0 {
		t.Errorf("the stopped run recorded days %v (%v); want none", days, err)
	}

	for _, rate := range []float64{0, 1000} {
		reg, found, err := run(rate)
		if err != nil || len(found) != 0 {
			t.Fatalf("audit at rate %v: %d findings, %v; want none", rate, len(found), err)
		}
		if got := counter(t, reg, "onceflow_reconciler_audit_provider_documents_listed_total"); got != 40 {
			t.Errorf("rate %v: %v provider documents listed; want 40", rate, got)
		}
	}
}
