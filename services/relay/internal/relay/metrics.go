package relay

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/pkg/outbox"
)

// Metrics are the relay's Prometheus series, shared by every Relay of a
// process.
type Metrics struct {
	published   *prometheus.CounterVec
	failed      *prometheus.CounterVec
	parked      *prometheus.CounterVec
	unconfirmed *prometheus.CounterVec
	pruned      *prometheus.CounterVec
	leader      *prometheus.GaugeVec
	held        *prometheus.GaugeVec
	shards      *prometheus.GaugeVec
	pending     *prometheus.GaugeVec
	parkedRows  *prometheus.GaugeVec
	oldest      *prometheus.GaugeVec
	batch       *prometheus.HistogramVec
}

// NewMetrics creates the relay's series and registers them on reg. It fails
// when they are already registered there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"outbox"})
	}
	m := &Metrics{
		published: counter("onceflow_relay_published_total", "Outbox rows sent to their queue and marked published.", "outbox", "queue"),
		failed: counter("onceflow_relay_failed_total",
			"Failed attempts to send an outbox row; the row is retried with backoff or parked.", "outbox", "queue"),
		parked: counter("onceflow_relay_parked_total", "Outbox rows parked for an operator: unroutable, oversize, or out of attempts.", "outbox"),
		unconfirmed: counter("onceflow_relay_unconfirmed_total",
			"Outbox rows sent without a recorded outcome: SQS's answer was lost, or their publication could not be recorded "+
				"(the lease lapsed, the database failed). Each is sent again, so its consumer may receive it twice.", "outbox"),
		pruned: counter("onceflow_relay_pruned_total", "Published outbox rows deleted after the retention period.", "outbox"),
		leader: gauge("onceflow_relay_is_leader",
			"1 while this process holds shard 0 of the outbox, publishes it and runs the outbox's retention and backlog gauges, else 0."),
		held:   gauge("onceflow_relay_shards_held", "Shards of the outbox this process holds the lease of and publishes."),
		shards: gauge("onceflow_relay_shards", "Shards the outbox is split into in this process's configuration (RELAY_SHARDS)."),
		pending: gauge("onceflow_relay_pending_rows",
			"Unpublished, unparked outbox rows, due or backing off; exported by the leader only."),
		parkedRows: gauge("onceflow_relay_parked_rows", "Outbox rows parked and waiting for an operator; exported by the leader only."),
		oldest: gauge("onceflow_relay_oldest_pending_created_timestamp_seconds",
			"Creation time (Unix seconds) of the oldest pending outbox row; exported by the leader while any row is pending."),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceflow_relay_batch_seconds",
			Help:    "Time to send one batch of claimed outbox rows and record the results.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outbox"}),
	}
	for _, c := range []prometheus.Collector{m.published, m.failed, m.parked, m.unconfirmed, m.pruned, m.leader, m.held, m.shards, m.pending, m.parkedRows, m.oldest, m.batch} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register relay metrics: %w", err)
		}
	}
	return m, nil
}

// zero creates the series of ob at zero so dashboards see them before the
// first event, and records its number of shards.
func (m *Metrics) zero(ob Outbox, shards int) {
	name := ob.Table.String()
	for _, r := range ob.Routes {
		m.published.WithLabelValues(name, queueLabel(r.Queue))
		m.failed.WithLabelValues(name, queueLabel(r.Queue))
	}
	m.parked.WithLabelValues(name)
	m.unconfirmed.WithLabelValues(name)
	m.pruned.WithLabelValues(name)
	m.leader.WithLabelValues(name).Set(0)
	m.held.WithLabelValues(name).Set(0)
	m.shards.WithLabelValues(name).Set(float64(shards))
}

// report sets the backlog gauges of the outbox called name.
func (m *Metrics) report(name string, s outbox.Stats) {
	m.pending.WithLabelValues(name).Set(float64(s.Pending))
	m.parkedRows.WithLabelValues(name).Set(float64(s.Parked))
	if s.OldestPending.IsZero() {
		m.oldest.DeleteLabelValues(name)
		return
	}
	m.oldest.WithLabelValues(name).Set(float64(s.OldestPending.UnixNano()) / 1e9)
}

// forget removes the backlog gauges of the outbox called name when this
// process stops leading it, so only the leader's figures are scraped.
func (m *Metrics) forget(name string) {
	m.pending.DeleteLabelValues(name)
	m.parkedRows.DeleteLabelValues(name)
	m.oldest.DeleteLabelValues(name)
}
