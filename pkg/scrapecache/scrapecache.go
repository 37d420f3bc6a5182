// Package scrapecache bounds what a Prometheus collector backed by a
// database query costs. Prometheus scrapes every replica, often from two
// servers, and each scrape ran the collector's query; a slow query then
// timed the scrape out and the series vanished, alerts on them included.
// A Collector here runs its query at most once per interval, however many
// scrapes arrive (they share the last answer) and whether it succeeds or
// fails, and when the query fails it keeps answering with the last good
// values for a while instead of none.
package scrapecache

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Read queries the values of one scrape.
type Read func(ctx context.Context) ([]prometheus.Metric, error)

// Options tune a Collector; zero values take the defaults.
type Options struct {
	// Every is how long an answer is reused (default 15s).
	Every time.Duration
	// Timeout bounds one Read (default 2s).
	Timeout time.Duration
	// KeepFor is how long the last good answer stands in for failing
	// reads before the series are left out (default 5m).
	KeepFor time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Collector is a prometheus.Collector whose Read runs at most once per
// Options.Every.
type Collector struct {
	read  Read
	descs []*prometheus.Desc
	log   *zap.Logger
	opts  Options

	mu       sync.Mutex // one Read at a time; scrapes meanwhile wait for its answer
	last     []prometheus.Metric
	at       time.Time // when last was read
	failedAt time.Time // when the last Read failed, zero after a success
}

// New returns a Collector of the metrics descs describes, read by read.
// A failed read is logged on log.
func New(read Read, log *zap.Logger, opts Options, descs ...*prometheus.Desc) *Collector {
	if opts.Every <= 0 {
		opts.Every = 15 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.KeepFor <= 0 {
		opts.KeepFor = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Collector{read: read, descs: descs, log: log, opts: opts}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the last answer if it is fresh,
// else a new read (unless one failed within Every: a failing query is not
// retried by every scrape); if that fails, the last answer while it is
// younger than KeepFor, else nothing.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.current() {
		ch <- m
	}
}

func (c *Collector) current() []prometheus.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.opts.Now()
	if c.last != nil && now.Sub(c.at) < c.opts.Every {
		return c.last
	}
	if !c.failedAt.IsZero() && now.Sub(c.failedAt) < c.opts.Every {
		return c.stale(now)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	ms, err := c.read(ctx)
	if err != nil {
		c.failedAt = now
		c.log.Warn("collect metrics; serving the last good values", zap.Error(err), zap.Time("read_at", c.at))
		return c.stale(now)
	}
	c.last, c.at, c.failedAt = ms, now, time.Time{}
	return ms
}

// stale is the last good answer while it is younger than KeepFor, else
// nothing.
func (c *Collector) stale(now time.Time) []prometheus.Metric {
	if now.Sub(c.at) < c.opts.KeepFor {
		return c.last
	}
	return nil
}
