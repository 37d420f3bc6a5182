// Package findings keeps the reconciler's findings: one open finding per
// kind and reference however many runs see it, closed by the first run of the
// same check that no longer does. Open findings are exported as a gauge per
// kind.
package findings

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// Recorder records findings in the reconciler's own schema.
type Recorder struct{ own *store.Store }

// New returns a recorder writing through own.
func New(own *store.Store) *Recorder { return &Recorder{own: own} }

// Record marks every finding seen and then closes the open findings of kinds
// (the kinds the check covers) that the run started at runStarted did not
// see. It returns how many it closed; an error is the store's, and the first
// one stops the recording.
func (r *Recorder) Record(ctx context.Context, kinds []string, found []store.Finding, runStarted time.Time) (closed int64, err error) {
	for _, f := range found {
		f.Detail = clip(f.Detail)
		if err := r.own.SeeFinding(ctx, f); err != nil {
			return 0, err
		}
	}
	return r.own.CloseUnseenFindings(ctx, kinds, runStarted)
}

func clip(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}

// Gauge exports the open findings per kind at each scrape.
type Gauge struct {
	own  *store.Store
	desc *prometheus.Desc
}

// NewGauge returns the collector reading through own; register it on the
// service's registry.
func NewGauge(own *store.Store) *Gauge {
	return &Gauge{own: own, desc: prometheus.NewDesc("onceflow_reconciler_findings_open", "Open findings by kind.", []string{"kind"}, nil)}
}

// Describe implements prometheus.Collector.
func (g *Gauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector with one short query; a failed
// query becomes an invalid metric.
func (g *Gauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := g.own.OpenFindingsByKind(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.desc, err)
		return
	}
	for _, c := range counts {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(c.Open), c.Kind)
	}
}
