package cases

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stat is the open cases of one kind and the oldest one's age.
type Stat struct {
	Kind      string
	Open      int64
	OldestAge time.Duration
}

// StatsFunc reads a schema's open cases per kind, ages by the database's
// clock.
type StatsFunc func(ctx context.Context) ([]Stat, error)

// Collector exports, at each scrape, a service's onceflow_cases_open and
// onceflow_case_oldest_open_age_seconds by kind.
type Collector struct {
	kinds        []string
	stats        StatsFunc
	onErr        func(error)
	open, oldest *prometheus.Desc
}

// NewCollector returns the collector for service's schema: kinds are
// reported at 0 when none is open, so a dashboard tells "none" from "not
// scraped"; parked_outbox_row is left out (the reconciler reports it as
// service="relay"). A failed query fails the scrape with an invalid
// metric, or, when onErr is not nil, goes to onErr and leaves the series
// out of the scrape.
func NewCollector(service string, kinds []string, stats StatsFunc, onErr func(error)) *Collector {
	svc := prometheus.Labels{"service": service}
	return &Collector{kinds: kinds, stats: stats, onErr: onErr,
		open: prometheus.NewDesc("onceflow_cases_open", "Open cases (docs/cases.md) by kind.", []string{"kind"}, svc),
		oldest: prometheus.NewDesc("onceflow_case_oldest_open_age_seconds",
			"Age of the oldest open case by kind, by the database's clock (0 when none is open).", []string{"kind"}, svc),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.oldest
}

// Collect implements prometheus.Collector with one short query.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := c.stats(ctx)
	if err != nil {
		if c.onErr != nil {
			c.onErr(err)
			return
		}
		ch <- prometheus.NewInvalidMetric(c.open, err)
		return
	}
	seen := map[string]bool{}
	for _, s := range stats {
		if s.Kind == ParkedOutboxRow {
			continue // the relay's cases: the reconciler reports them (service="relay")
		}
		seen[s.Kind] = true
		c.emit(ch, s)
	}
	for _, k := range c.kinds {
		if !seen[k] {
			c.emit(ch, Stat{Kind: k})
		}
	}
}

func (c *Collector) emit(ch chan<- prometheus.Metric, s Stat) {
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.Open), s.Kind)
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, s.OldestAge.Seconds(), s.Kind)
}
