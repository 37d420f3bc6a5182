package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// documentCollector reports the document table at scrape time: documents
// by status, how many are due, the age of the oldest due one and how many
// need attention.
type documentCollector struct {
	store                               *store.Store
	log                                 *zap.Logger
	byStatus, due, oldestDue, attention *prometheus.Desc
}

func newDocumentCollector(st *store.Store, log *zap.Logger) *documentCollector {
	return &documentCollector{store: st, log: log,
		byStatus:  prometheus.NewDesc("onceflow_invoicer_documents", "Fiscal documents by status.", []string{"status"}, nil),
		due:       prometheus.NewDesc("onceflow_invoicer_documents_due", "Documents due for an emission attempt or DGI check now.", nil, nil),
		oldestDue: prometheus.NewDesc("onceflow_invoicer_oldest_due_seconds", "How long the oldest due document has been waiting for a worker.", nil, nil),
		attention: prometheus.NewDesc("onceflow_invoicer_needs_attention_documents", "Documents parked for an operator.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *documentCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.byStatus
	ch <- c.due
	ch <- c.oldestDue
	ch <- c.attention
}

// Collect implements prometheus.Collector; a failed query is logged and its
// metrics are left out of the scrape.
func (c *documentCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.store.CountByStatus(ctx)
	if err != nil {
		c.log.Warn("collect document metrics", zap.Error(err))
		return
	}
	attention := 0.0
	for status, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.byStatus, prometheus.GaugeValue, float64(n), string(status))
		if status == fiscal.StatusNeedsAttention {
			attention = float64(n)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.attention, prometheus.GaugeValue, attention)
	due, err := c.store.DueStats(ctx)
	if err != nil {
		c.log.Warn("collect due metrics", zap.Error(err))
		return
	}
	ch <- prometheus.MustNewConstMetric(c.due, prometheus.GaugeValue, float64(due.Due))
	ch <- prometheus.MustNewConstMetric(c.oldestDue, prometheus.GaugeValue, max(0, time.Since(due.OldestDueAt).Seconds()))
}
