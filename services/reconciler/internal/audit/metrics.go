package audit

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the provider audit's Prometheus counters: what each run
// costs at the provider and in our database.
type Metrics struct {
	daysListed prometheus.Counter
	daysOnward prometheus.Counter
	queries    prometheus.Counter
	listed     prometheus.Counter
	lookedUp   prometheus.Counter
	read       prometheus.Counter
	paced      prometheus.Counter
}

// NewMetrics registers the audit's counters with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		daysListed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_audit_days_listed_total",
			Help: "Calendar days the provider audit listed in full at the provider.",
		}),
		daysOnward: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_audit_days_listed_onward_total",
			Help: "Times the provider audit listed a large today onward: only the numbers above those its earlier listings saw.",
		}),
		queries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_audit_listing_queries_total",
			Help: "Queries the audit's listings sent to the provider: one for a day listed whole, one per number range of a day listed in ranges or onward.",
		}),
		listed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_audit_provider_documents_listed_total",
			Help: "Documents the provider returned to the audit's listings of a day, in full or onward.",
		}),
		lookedUp: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_audit_references_looked_up_total",
			Help: "References the audit looked up at the provider: our documents that changed, and those a day's listing lacked.",
		}),
		read: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_audit_documents_read_total",
			Help: "Our documents the audit read: those of each day it listed in full, and those that changed since its previous run.",
		}),
		paced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_audit_paced_seconds_total",
			Help: "Seconds the audit waited between answers to its listings to keep within RECONCILER_AUDIT_RATE.",
		}),
	}
	reg.MustRegister(m.daysListed, m.daysOnward, m.queries, m.listed, m.lookedUp, m.read, m.paced)
	return m
}
