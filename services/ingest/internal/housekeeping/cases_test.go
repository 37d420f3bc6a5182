package housekeeping_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/ingest/internal/housekeeping"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// A finished receipt an open case holds on to is kept past retention; once
// the case is closed it goes like any other.
func TestPruneKeepsReceiptsOfOpenCases(t *testing.T) {
	p := pool(t)
	week := 7 * 24 * time.Hour
	receipt(t, p, "held", "rejected", week+time.Hour)
	receipt(t, p, "loose", "rejected", week+time.Hour)
	_, err := p.Exec(t.Context(), `INSERT INTO ingest.cases (kind, subject, receipt_id)
		SELECT 'unmatched_payment', 'payment:P-1', id FROM ingest.webhook_receipts WHERE dedupe_key = 'held'`)
	if err != nil {
		t.Fatal(err)
	}
	pr := housekeeping.NewPruner(store.New(p), zap.NewNop(), prometheus.NewRegistry(), housekeeping.Config{
		ReceiptRetention: week, IdempotencyRetention: 24 * time.Hour, Interval: time.Minute, Batch: 10,
	})
	left := func() string {
		var keys string
		_ = p.QueryRow(t.Context(), "SELECT coalesce(string_agg(dedupe_key, ','), '') FROM ingest.webhook_receipts").Scan(&keys)
		return keys
	}
	if err := pr.Prune(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := left(); got != "held" {
		t.Fatalf("receipts left = %q, want the one an open case holds", got)
	}
	if _, err := p.Exec(t.Context(), `UPDATE ingest.cases SET closed_at = now(), action = 'acknowledge', closed_by = 'op'`); err != nil {
		t.Fatal(err)
	}
	if err := pr.Prune(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := left(); got != "" {
		t.Fatalf("receipts left = %q after the case closed, want none", got)
	}
}

// The cases collector reports open cases per kind and the oldest one's
// age by the database's clock, and 0 for ingest's kinds with none open; a
// parked outbox row's case is the relay's, which the reconciler reports.
func TestCasesReportsOpenCasesByKind(t *testing.T) {
	p := pool(t)
	_, err := p.Exec(t.Context(), `INSERT INTO ingest.cases (kind, subject, opened_at) VALUES
		('unmatched_payment', 'payment:a', now() - interval '1 hour'),
		('unmatched_payment', 'payment:b', now() - interval '1 minute'),
		('refused_refund', 'refund:c', now() - interval '10 minutes'),
		('parked_outbox_row', 'outbox:9', now() - interval '5 minutes')`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(t.Context(), `INSERT INTO ingest.cases (kind, subject, opened_at, closed_at, action, closed_by)
		VALUES ('parked_receipt', 'receipt:1', now() - interval '2 days', now(), 'replay', 'op')`); err != nil {
		t.Fatal(err)
	}
	c := housekeeping.NewCases(store.New(p))
	want := `
# HELP onceflow_cases_open Open cases (docs/cases.md) by kind.
# TYPE onceflow_cases_open gauge
onceflow_cases_open{kind="chargeback",service="ingest"} 0
onceflow_cases_open{kind="parked_receipt",service="ingest"} 0
onceflow_cases_open{kind="refused_refund",service="ingest"} 1
onceflow_cases_open{kind="unmatched_payment",service="ingest"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "onceflow_cases_open"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "onceflow_case_oldest_open_age_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			age := m.GetGauge().GetValue()
			kind := m.GetLabel()[0].GetValue()
			switch kind {
			case "unmatched_payment":
				if age < 3590 || age > 3700 {
					t.Fatalf("oldest unmatched_payment age %v, want about 3600", age)
				}
			case "parked_receipt":
				if age != 0 {
					t.Fatalf("oldest parked_receipt age %v with none open, want 0", age)
				}
			}
		}
	}
}
