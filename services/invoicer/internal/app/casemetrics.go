package app

import (
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// newCaseCollector reports the invoicer's open cases at scrape time: how
// many per kind and the oldest one's age, both computed by the database; a
// failed query is logged and the series are left out of the scrape.
func newCaseCollector(st *store.Store, log *zap.Logger) *cases.Collector {
	kinds := []string{cases.DocumentRejected, cases.DocumentRefused, cases.NeedsAttention}
	return cases.NewCollector("invoicer", kinds, st.OpenCaseStats, func(err error) {
		log.Warn("collect case metrics", zap.Error(err))
	})
}
