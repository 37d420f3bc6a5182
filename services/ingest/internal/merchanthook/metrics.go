package merchanthook

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// metrics are the deliverer's series.
type metrics struct {
	attempts *prometheus.CounterVec
	latency  prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, st *store.Store) metrics {
	m := metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_ingest_merchant_delivery_attempts_total",
			Help: "POSTs of notifications to the merchant by outcome: delivered, retry (failed, retried later) or parked.",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "onceflow_ingest_merchant_delivery_seconds",
			Help:    "Seconds one POST of a notification to the merchant took, answer included.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	reg.MustRegister(m.attempts, m.latency, &backlog{store: st, desc: prometheus.NewDesc("onceflow_ingest_merchant_deliveries",
		"Notifications for the merchant still open, by delivery status (pending, parked).", []string{"status"}, nil)})
	return m
}

// backlog exports, at each scrape, how many deliveries are pending and
// parked. Delivered ones are history (the attempts counter's delivered
// outcome counts them); counting them would read the whole table.
type backlog struct {
	store *store.Store
	desc  *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (b *backlog) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }

// Collect implements prometheus.Collector with one query over the open
// rows; both statuses are exported, zero when none is in it.
func (b *backlog) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := b.store.OpenDeliveryCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(b.desc, err)
		return
	}
	for _, s := range []string{store.DeliveryPending, store.DeliveryParked} {
		ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}
