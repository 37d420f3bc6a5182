package notify

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// TimeToValidBuckets are the histogram's buckets in seconds; 600 (the SLO's
// ten minutes, docs/slo.md) is one of them, so the SLI is exact.
var TimeToValidBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}

// Valid measures, for each document that becomes valid (authorized, or
// issued under the daily-summary rule), how long after ingest accepted its
// payment or refund it did: the time-to-valid-document SLI.
type Valid struct {
	hist prometheus.Histogram
	now  func() time.Time
}

// NewValid registers onceflow_invoicer_time_to_valid_document_seconds on
// reg; now is the clock (nil: time.Now).
func NewValid(reg prometheus.Registerer, now func() time.Time) *Valid {
	v := &Valid{now: now, hist: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "onceflow_invoicer_time_to_valid_document_seconds",
		Help:    "Seconds from ingest accepting a payment or refund to its fiscal document becoming authorized or issued.",
		Buckets: TimeToValidBuckets,
	})}
	if v.now == nil {
		v.now = time.Now
	}
	reg.MustRegister(v.hist)
	return v
}

// Observe records d (read in its status before the change) having moved to
// status to, once the change has committed. Only the first move into a valid
// status counts: issued to authorized, or a replay, observes nothing. The
// time runs from d's AcceptedAt, or its CreatedAt for a row recorded before
// AcceptedAt was kept. A nil Valid observes nothing.
func (v *Valid) Observe(d store.Document, to fiscal.Status) {
	if v == nil || valid(d.Status) || !valid(to) {
		return
	}
	since := d.CreatedAt
	if d.AcceptedAt != nil {
		since = *d.AcceptedAt
	}
	v.hist.Observe(max(0, v.now().Sub(since).Seconds()))
}

func valid(s fiscal.Status) bool {
	return s.Valid()
}
