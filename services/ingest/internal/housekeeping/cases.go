package housekeeping

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// caseKinds are the kinds ingest opens, reported as 0 when none is open
// so a dashboard tells "none" from "not scraped".
var caseKinds = []string{store.CaseUnmatchedPayment, store.CaseRefusedRefund, store.CaseParkedReceipt,
	store.CaseChargeback}

// Cases exports, at each scrape, ingest's open cases per kind and the age
// of the oldest, computed by the database's clock.
type Cases struct {
	store  *store.Store
	open   *prometheus.Desc
	oldest *prometheus.Desc
}

// NewCases returns the collector; register it on the service's registry.
func NewCases(st *store.Store) *Cases {
	svc := prometheus.Labels{"service": "ingest"}
	return &Cases{store: st,
		open: prometheus.NewDesc("onceflow_cases_open", "Open cases (docs/cases.md) by kind.", []string{"kind"}, svc),
		oldest: prometheus.NewDesc("onceflow_case_oldest_open_age_seconds",
			"Age of the oldest open case by kind, by the database's clock (0 when none is open).", []string{"kind"}, svc),
	}
}

// Describe implements prometheus.Collector.
func (c *Cases) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.oldest
}

// Collect implements prometheus.Collector with one short query.
func (c *Cases) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := c.store.OpenCaseStats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.open, err)
		return
	}
	seen := map[string]bool{}
	for _, s := range stats {
		if s.Kind == store.CaseParkedOutboxRow {
			continue // the relay\'s cases: the reconciler reports them (service="relay")
		}
		seen[s.Kind] = true
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.Open), s.Kind)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, s.Oldest.Seconds(), s.Kind)
	}
	for _, k := range caseKinds {
		if !seen[k] {
			ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, 0, k)
			ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, 0, k)
		}
	}
}
