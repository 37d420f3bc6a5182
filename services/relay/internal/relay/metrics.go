package relay

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the relay's Prometheus series, shared by every Relay of a
// process.
type Metrics struct {
	published *prometheus.CounterVec
	failed    *prometheus.CounterVec
	parked    *prometheus.CounterVec
	leader    *prometheus.GaugeVec
	batch     *prometheus.HistogramVec
}

// NewMetrics creates the relay's series and registers them on reg. It fails
// when they are already registered there.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_relay_published_total",
			Help: "Outbox rows sent to their queue and marked published.",
		}, []string{"outbox", "queue"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_relay_failed_total",
			Help: "Failed attempts to send an outbox row; the row is retried with backoff or parked.",
		}, []string{"outbox", "queue"}),
		parked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_relay_parked_total",
			Help: "Outbox rows parked for an operator: unroutable, oversize, or out of attempts.",
		}, []string{"outbox"}),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "onceflow_relay_is_leader",
			Help: "1 while this process holds the outbox's lease and publishes it, else 0.",
		}, []string{"outbox"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceflow_relay_batch_seconds",
			Help:    "Time to claim, send and record one batch of outbox rows.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outbox"}),
	}
	for _, c := range []prometheus.Collector{m.published, m.failed, m.parked, m.leader, m.batch} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register relay metrics: %w", err)
		}
	}
	return m, nil
}

// zero creates the series of ob at zero so dashboards see them before the
// first event.
func (m *Metrics) zero(ob Outbox) {
	name := ob.Table.String()
	for _, r := range ob.Routes {
		m.published.WithLabelValues(name, queueLabel(r.Queue))
		m.failed.WithLabelValues(name, queueLabel(r.Queue))
	}
	m.parked.WithLabelValues(name)
	m.leader.WithLabelValues(name).Set(0)
}
