package housekeeping

import (
	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// NewCases returns the collector of ingest's open cases per kind and the
// age of the oldest, by the database's clock; a failed query fails the
// scrape. Register it on the service's registry.
func NewCases(st *store.Store) *cases.Collector {
	kinds := []string{cases.UnmatchedPayment, cases.RefusedRefund, cases.ParkedReceipt, cases.Chargeback}
	return cases.NewCollector("ingest", kinds, st.OpenCaseStats, nil)
}
