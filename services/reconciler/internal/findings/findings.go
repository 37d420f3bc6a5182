// Package findings keeps the reconciler's findings: one open finding per
// kind and reference however many runs see it, closed by the first run of the
// same check that no longer does. Open findings are exported as a gauge per
// kind.
package findings

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	store "github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"
)

// Finding is something a check saw that a person should look at.
type Finding struct {
	Kind      string `json:"kind"`
	Reference string `json:"reference"`
	Detail    string `json:"detail"`
}

// Store records findings in the reconciler's own schema.
type Store struct{ q *store.Queries }

// New returns a store.
func New(q *store.Queries) *Store { return &Store{q: q} }

// Record marks every finding seen and then closes the open findings of kinds
// (the kinds the check covers) that the run started at runStarted did not
// see. It returns how many it closed.
func (s *Store) Record(ctx context.Context, kinds []string, found []Finding, runStarted time.Time) (closed int64, err error) {
	for _, f := range found {
		if err := s.q.FindingSeen(ctx, f.Kind, f.Reference, clip(f.Detail)); err != nil {
			return 0, fmt.Errorf("record finding %s %s: %w", f.Kind, f.Reference, err)
		}
	}
	closed, err = s.q.FindingsCloseUnseen(ctx, kinds, runStarted)
	if err != nil {
		return 0, fmt.Errorf("close findings: %w", err)
	}
	return closed, nil
}

// Open lists open findings, of one kind or (kind "") all, oldest first.
func (s *Store) Open(ctx context.Context, kind string, limit int) ([]store.FindingsOpenRow, error) {
	return s.q.FindingsOpen(ctx, kind, int32(limit))
}

func clip(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}

// Gauge exports the open findings per kind at each scrape.
type Gauge struct {
	q    *store.Queries
	desc *prometheus.Desc
}

// NewGauge returns the collector; register it on the service's registry.
func NewGauge(q *store.Queries) *Gauge {
	return &Gauge{q: q, desc: prometheus.NewDesc("onceflow_reconciler_findings_open", "Open findings by kind.", []string{"kind"}, nil)}
}

// Describe implements prometheus.Collector.
func (g *Gauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector with one short query.
func (g *Gauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := g.q.FindingsOpenByKind(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.desc, err)
		return
	}
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(r.Open), r.Kind)
	}
}
