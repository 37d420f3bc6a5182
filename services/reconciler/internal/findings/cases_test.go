package findings

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// The cases gauge counts the reconciler's open cases by kind and the
// relay's parked_outbox_row cases across ingest and the invoicer, with the
// oldest one's age; closed cases do not count.
func TestCasesGauge(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	opened := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	db.Exec(t, `INSERT INTO reconciler.cases (kind, subject, opened_at) VALUES
		('missing_document', 'payment:p1', $1), ('missing_document', 'payment:p2', $1::timestamptz + interval '1 minute')`, opened)
	db.Exec(t, `INSERT INTO reconciler.cases (kind, subject, closed_at, closed_by, action) VALUES
		('audit_disagreement', 'audit:x:1', now(), 'ana', 'acknowledge')`)
	db.Exec(t, `INSERT INTO ingest.cases (kind, subject, opened_at) VALUES ('parked_outbox_row', 'outbox:1', $1::timestamptz + interval '10 minutes')`, opened)
	db.Exec(t, `INSERT INTO invoicer.cases (kind, subject, opened_at) VALUES ('parked_outbox_row', 'outbox:7', $1::timestamptz + interval '5 minutes')`, opened)
	g := NewCasesGauge(store.New(db.Pool), store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool))
	g.now = func() time.Time { return opened.Add(time.Hour) }

	want := `
# HELP onceflow_case_oldest_open_age_seconds Age of the oldest open case by owning service and kind.
# TYPE onceflow_case_oldest_open_age_seconds gauge
onceflow_case_oldest_open_age_seconds{kind="audit_disagreement",service="reconciler"} 0
onceflow_case_oldest_open_age_seconds{kind="missing_document",service="reconciler"} 3600
onceflow_case_oldest_open_age_seconds{kind="parked_outbox_row",service="relay"} 3300
# HELP onceflow_cases_open Open cases by owning service and kind (docs/cases.md).
# TYPE onceflow_cases_open gauge
onceflow_cases_open{kind="audit_disagreement",service="reconciler"} 0
onceflow_cases_open{kind="missing_document",service="reconciler"} 2
onceflow_cases_open{kind="parked_outbox_row",service="relay"} 2
`
	if err := testutil.CollectAndCompare(g, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
