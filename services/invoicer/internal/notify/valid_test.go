package notify_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// timeToValid reads the histogram from reg: its sample count and sum.
func timeToValid(tb testing.TB, reg *prometheus.Registry) (count uint64, sum float64) {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "onceflow_invoicer_time_to_valid_document_seconds" {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	tb.Fatal("onceflow_invoicer_time_to_valid_document_seconds is not registered")
	return 0, 0
}

func TestValidObservesTheFirstMoveIntoAValidStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	accepted, created := now.Add(-7*time.Minute), now.Add(-2*time.Minute)
	for _, c := range []struct {
		name     string
		from, to fiscal.Status
		accepted *time.Time
		want     float64 // seconds observed; -1: nothing
	}{
		{"pending to authorized", fiscal.StatusPending, fiscal.StatusAuthorized, &accepted, 420},
		{"pending at DGI to authorized", fiscal.StatusPendingDGI, fiscal.StatusAuthorized, &accepted, 420},
		{"unknown to issued (daily summary)", fiscal.StatusUnknown, fiscal.StatusIssued, &accepted, 420},
		{"needs attention resolved to authorized", fiscal.StatusNeedsAttention, fiscal.StatusAuthorized, &accepted, 420},
		{"a row without accepted_at counts from created_at", fiscal.StatusPending, fiscal.StatusAuthorized, nil, 120},
		{"issued to authorized was already valid", fiscal.StatusIssued, fiscal.StatusAuthorized, &accepted, -1},
		{"authorized again (a replay)", fiscal.StatusAuthorized, fiscal.StatusAuthorized, &accepted, -1},
		{"pending to pending at DGI is not valid yet", fiscal.StatusPending, fiscal.StatusPendingDGI, &accepted, -1},
		{"rejected", fiscal.StatusPendingDGI, fiscal.StatusRejected, &accepted, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			v := notify.NewValid(reg, func() time.Time { return now })
			v.Observe(store.Document{Status: c.from, AcceptedAt: c.accepted, CreatedAt: created}, c.to)
			count, sum := timeToValid(t, reg)
			switch {
			case c.want < 0 && count != 0:
				t.Errorf("observed %d samples (sum %v), want none", count, sum)
			case c.want >= 0 && (count != 1 || sum != c.want):
				t.Errorf("observed %d samples summing %v s, want one of %v s", count, sum, c.want)
			}
		})
	}
}

func TestValidNeverObservesANegativeTimeAndNilObservesNothing(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ahead := now.Add(time.Minute) // ingest's clock ahead of ours
	reg := prometheus.NewRegistry()
	notify.NewValid(reg, func() time.Time { return now }).Observe(store.Document{Status: fiscal.StatusPending, AcceptedAt: &ahead}, fiscal.StatusAuthorized)
	if count, sum := timeToValid(t, reg); count != 1 || sum != 0 {
		t.Errorf("observed %d samples summing %v s, want one of 0 s", count, sum)
	}
	var none *notify.Valid
	none.Observe(store.Document{Status: fiscal.StatusPending}, fiscal.StatusAuthorized)
}

func TestTheSLOThresholdIsABucket(t *testing.T) {
	t.Parallel()
	for _, b := range notify.TimeToValidBuckets {
		if b == 600 {
			return
		}
	}
	t.Fatalf("buckets %v lack 600 s, the SLO's threshold (docs/slo.md)", notify.TimeToValidBuckets)
}
