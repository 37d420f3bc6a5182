package app

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/scrapecache"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// exactUpTo is the table size up to which the final statuses are counted
// exactly: a count over at most this many rows. Above it they are the
// planner's estimates.
const exactUpTo = 100_000

// finalStatuses are the statuses a document ends in; the others, still in
// the invoicer's hands or an operator's, are counted exactly at any table
// size.
var finalStatuses = slices.DeleteFunc(slices.Clone(fiscal.Statuses), func(s fiscal.Status) bool { return !s.Final() })

// documentCollector reports the document table: documents by status, how
// many are due, the age of the oldest due one and how many need attention.
// Each read costs at most exactUpTo rows plus the open documents, whatever
// the table's history; scrapes share one read per interval (scrapecache).
type documentCollector struct {
	store                               *store.Store
	exactUpTo                           int64
	byStatus, due, oldestDue, attention *prometheus.Desc
}

// newDocumentCollector returns the collector, reading at most once per
// every.
func newDocumentCollector(st *store.Store, log *zap.Logger, every time.Duration) *scrapecache.Collector {
	return newDocuments(st, exactUpTo).cached(log, every)
}

// newDocuments returns the reads behind the collector, counting final
// statuses exactly below exact documents.
func newDocuments(st *store.Store, exact int64) *documentCollector {
	return &documentCollector{store: st, exactUpTo: exact,
		byStatus: prometheus.NewDesc("onceflow_invoicer_documents",
			"Fiscal documents by status: exact for open statuses; for final ones exact up to 100,000 documents, the planner's estimate above.", []string{"status"}, nil),
		due:       prometheus.NewDesc("onceflow_invoicer_documents_due", "Documents due for an emission attempt or DGI check now.", nil, nil),
		oldestDue: prometheus.NewDesc("onceflow_invoicer_oldest_due_seconds", "How long the oldest due document has been waiting for a worker.", nil, nil),
		attention: prometheus.NewDesc("onceflow_invoicer_needs_attention_documents", "Documents parked for an operator.", nil, nil),
	}
}

// cached is c as a collector whose scrapes share one read per every.
func (c *documentCollector) cached(log *zap.Logger, every time.Duration) *scrapecache.Collector {
	return scrapecache.New(c.read, log, scrapecache.Options{Every: every}, c.byStatus, c.due, c.oldestDue, c.attention)
}

// read queries the metrics of one scrape.
func (c *documentCollector) read(ctx context.Context) ([]prometheus.Metric, error) {
	counts, err := c.countByStatus(ctx)
	if err != nil {
		return nil, err
	}
	due, err := c.store.DueStats(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]prometheus.Metric, 0, len(counts)+3)
	for _, st := range fiscal.Statuses {
		out = append(out, prometheus.MustNewConstMetric(c.byStatus, prometheus.GaugeValue, counts[st], string(st)))
	}
	return append(out,
		prometheus.MustNewConstMetric(c.attention, prometheus.GaugeValue, counts[fiscal.StatusNeedsAttention]),
		prometheus.MustNewConstMetric(c.due, prometheus.GaugeValue, float64(due.Due)),
		prometheus.MustNewConstMetric(c.oldestDue, prometheus.GaugeValue, max(0, time.Since(due.OldestDueAt).Seconds())),
	), nil
}

// countByStatus counts every status exactly while the table holds fewer
// than c.exactUpTo documents; above, the open statuses exactly and the final
// ones from the planner's statistics. The statistics say which: only when
// they put the table below the limit (or were never gathered) does a count,
// stopping at the limit, decide.
func (c *documentCollector) countByStatus(ctx context.Context) (map[fiscal.Status]float64, error) {
	est, err := c.store.EstimateByStatus(ctx)
	if err != nil {
		return nil, err
	}
	large := est.Rows >= float64(c.exactUpTo)
	if !large {
		total, err := c.store.CountUpTo(ctx, c.exactUpTo)
		if err != nil {
			return nil, err
		}
		large = total >= c.exactUpTo
	}
	out := map[fiscal.Status]float64{}
	if !large {
		exact, err := c.store.CountByStatus(ctx)
		for st, n := range exact {
			out[st] = float64(n)
		}
		return out, err
	}
	for _, st := range finalStatuses {
		out[st] = est.ByStatus[st]
	}
	open, err := c.store.CountOpen(ctx)
	for st, n := range open {
		out[st] = float64(n)
	}
	return out, err
}
