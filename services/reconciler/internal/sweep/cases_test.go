package sweep_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// TestSweepMissingDocumentCases: a payment whose only invoice was rejected
// has no valid document, so the sweep has ingest announce its event again and opens a
// missing_document case with its money; one that a case in ingest or the
// invoicer already holds is left alone; once the invoice is authorized the
// case closes by itself.
func TestSweepMissingDocumentCases(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	old := time.Now().Add(-time.Hour)
	for _, id := range []string{"p1", "p2", "p3", "p4"} {
		db.Payment(t, id, old)
		db.Outbox(t, reconcilertest.PaymentPaid(id))
	}
	db.Invoice(t, "p1")
	db.Exec(t, `UPDATE invoicer.fiscal_documents SET status = 'rejected' WHERE source_ref = 'p1'`)
	db.Exec(t, `INSERT INTO ingest.cases (kind, subject, psp_payment_id) VALUES ('unmatched_payment', 'payment:p2', 'p2')`)
	db.Exec(t, `INSERT INTO invoicer.cases (kind, subject, psp_payment_id) VALUES ('document_refused', 'document:9', 'p3')`)
	db.Invoice(t, "p4") // its case names only the document it holds on to
	db.Exec(t, `UPDATE invoicer.fiscal_documents SET status = 'needs_attention' WHERE source_ref = 'p4'`)
	db.Exec(t, `INSERT INTO invoicer.cases (kind, subject, document_id)
		SELECT 'needs_attention', 'document:' || id, id FROM invoicer.fiscal_documents WHERE source_ref = 'p4'`)
	cfg := sweep.Config{Grace: 10 * time.Minute, PageSize: 500, MaxPerRun: 5000, Overlap: time.Hour}
	s := sweep.New(store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool), reconcilertest.NewIngest(t, db.Pool).Client(), cfg,
		zaptest.NewLogger(t), sweep.NewMetrics(prometheus.NewRegistry()))
	own := store.New(db.Pool)
	ctx := context.Background()

	got, err := s.Run(ctx, own)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := (sweep.Result{Checked: 4, Missing: 1, Republished: 1, Cases: 1}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	all, err := own.Cases(ctx, store.CaseFilter{Status: "all", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("cases = %+v, want one missing_document case", all)
	}
	c := all[0]
	if c.Kind != cases.MissingDocument || c.Subject != "payment:p1" || c.PSPPaymentID != "p1" ||
		c.OrderID != "order-p1" || c.AmountMinor == nil || *c.AmountMinor != 12200 || c.Currency != "UYU" || c.ClosedAt != nil {
		t.Errorf("case = %+v", c)
	}
	var ev map[string]string
	if err := json.Unmarshal(c.Evidence, &ev); err != nil || ev["document_status"] != "rejected" || ev["event"] != "republished" {
		t.Errorf("evidence = %s (%v), want document_status rejected, event republished", c.Evidence, err)
	}

	db.Exec(t, `UPDATE invoicer.fiscal_documents SET status = 'authorized' WHERE source_ref = 'p1'`)
	got, err = s.Run(ctx, own)
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if got.Resolved != 1 || got.Missing != 0 {
		t.Errorf("second Run = %+v, want the case resolved and nothing missing", got)
	}
	c, err = own.Case(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.ClosedAt == nil || c.ClosedBy != sweep.ActorReconciler || c.Action != sweep.ActionResolvedByDocument {
		t.Errorf("case after the invoice was authorized = %+v, want closed by the reconciler", c)
	}
}
