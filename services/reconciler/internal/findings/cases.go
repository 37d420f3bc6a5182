package findings

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// CaseStats reads one schema's open cases of a kind; the ingest and
// invoicer readers are each one.
type CaseStats interface {
	OpenCaseStat(ctx context.Context, kind string) (store.CaseStat, bool, error)
}

// CasesGauge exports, at each scrape, onceflow_cases_open and
// onceflow_case_oldest_open_age_seconds for the reconciler's own cases
// (service="reconciler", by kind) and for the relay's parked_outbox_row
// cases, read from ingest's and the invoicer's schemas (service="relay").
type CasesGauge struct {
	own       *store.Store
	producers []CaseStats
	open, age *prometheus.Desc
	now       func() time.Time
}

// NewCasesGauge returns the collector reading own and the producers'
// schemas; register it on the service's registry.
func NewCasesGauge(own *store.Store, producers ...CaseStats) *CasesGauge {
	return &CasesGauge{own: own, producers: producers, now: time.Now,
		open: prometheus.NewDesc("onceflow_cases_open", "Open cases by owning service and kind (docs/cases.md).",
			[]string{"service", "kind"}, nil),
		age: prometheus.NewDesc("onceflow_case_oldest_open_age_seconds", "Age of the oldest open case by owning service and kind.",
			[]string{"service", "kind"}, nil)}
}

// Describe implements prometheus.Collector.
func (g *CasesGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.open; ch <- g.age }

// Collect implements prometheus.Collector with a few short queries; a
// failed one becomes an invalid metric. A kind with no open case exports
// zero for the ones the reconciler owns and for parked_outbox_row, so an
// alert's series resolves.
func (g *CasesGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := g.own.OpenCaseStats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(g.open, err)
		return
	}
	byKind := map[string]store.CaseStat{cases.MissingDocument: {}, cases.AuditDisagreement: {}}
	for _, s := range stats {
		byKind[s.Kind] = s
	}
	for kind, s := range byKind {
		g.emit(ch, "reconciler", kind, s)
	}
	var parked store.CaseStat
	for _, p := range g.producers {
		s, ok, err := p.OpenCaseStat(ctx, cases.ParkedOutboxRow)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(g.open, err)
			return
		}
		if ok {
			parked.Open += s.Open
			if parked.Oldest.IsZero() || s.Oldest.Before(parked.Oldest) {
				parked.Oldest = s.Oldest
			}
		}
	}
	g.emit(ch, "relay", cases.ParkedOutboxRow, parked)
}

func (g *CasesGauge) emit(ch chan<- prometheus.Metric, service, kind string, s store.CaseStat) {
	ch <- prometheus.MustNewConstMetric(g.open, prometheus.GaugeValue, float64(s.Open), service, kind)
	age := 0.0
	if s.Open > 0 && !s.Oldest.IsZero() {
		age = max(g.now().Sub(s.Oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(g.age, prometheus.GaugeValue, age, service, kind)
}
