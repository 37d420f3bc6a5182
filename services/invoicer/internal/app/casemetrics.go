package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// caseKinds are the kinds of case the invoicer opens, reported at 0 when
// none is open so that each kind's series exists.
var caseKinds = []string{store.CaseDocumentRejected, store.CaseDocumentRefused, store.CaseNeedsAttention}

// caseCollector reports the invoicer's open cases at scrape time: how many
// per kind and the oldest one's age, both computed by the database.
type caseCollector struct {
	store        *store.Store
	log          *zap.Logger
	open, oldest *prometheus.Desc
}

func newCaseCollector(st *store.Store, log *zap.Logger) *caseCollector {
	service := prometheus.Labels{"service": "invoicer"}
	return &caseCollector{store: st, log: log,
		open:   prometheus.NewDesc("onceflow_cases_open", "Open cases by kind.", []string{"kind"}, service),
		oldest: prometheus.NewDesc("onceflow_case_oldest_open_age_seconds", "Age of the oldest open case of each kind (0: none open).", []string{"kind"}, service),
	}
}

// Describe implements prometheus.Collector.
func (c *caseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.oldest
}

// Collect implements prometheus.Collector; a failed query is logged and the
// metrics are left out of the scrape.
func (c *caseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := c.store.OpenCaseStats(ctx)
	if err != nil {
		c.log.Warn("collect case metrics", zap.Error(err))
		return
	}
	byKind := map[string]store.CaseStats{}
	for _, s := range stats {
		if s.Kind == store.CaseParkedOutboxRow {
			continue // the relay\'s cases: the reconciler reports them (service="relay")
		}
		byKind[s.Kind] = s
	}
	for _, k := range caseKinds {
		if _, ok := byKind[k]; !ok {
			byKind[k] = store.CaseStats{Kind: k}
		}
	}
	for k, s := range byKind {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.Open), k)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, s.OldestAge.Seconds(), k)
	}
}
