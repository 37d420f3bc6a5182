package detect_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/reconciler/internal/detect"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

type noSweep struct{}

func (noSweep) Run(context.Context, *store.Store) (sweep.Result, error) { return sweep.Result{}, nil }

// stuck seeds one case of every kind, plus work that is not (yet) stuck.
func stuck(t *testing.T, db *reconcilertest.DB) {
	db.Exec(t, `INSERT INTO ingest.outbox (event_key, event_type, payload, parked_at, parked_reason)
		VALUES ('payment:p1:paid', 'billing.document_requested', '{}', now(), 'no route'),
		       ('payment:p2:paid', 'billing.document_requested', '{}', NULL, NULL)`)
	db.Exec(t, `INSERT INTO invoicer.outbox (event_key, event_type, payload, parked_at, parked_reason)
		VALUES ('notification:d1', 'notification.document', '{}', now(), 'too large')`)
	db.Exec(t, `INSERT INTO ingest.webhook_receipts (source, scope, dedupe_key, event_id, body, status, received_at, lease_token, lease_expires_at) VALUES
		('dlocal', 'dlocal', 'k-parked', 'D-parked', '{}', 'parked', now(), NULL, NULL),
		('dlocal', 'dlocal', 'k-old', 'D-old', '{}', 'pending', now() - interval '1 hour', NULL, NULL),
		('dlocal', 'dlocal', 'k-new', 'D-new', '{}', 'pending', now(), NULL, NULL),
		('dlocal', 'dlocal', 'k-claimed', 'D-claimed', '{}', 'pending', now(), gen_random_uuid(), now() - interval '1 hour')`)
	db.Invoice(t, "p-attention")
	db.Invoice(t, "p-fresh-attention")
	db.Exec(t, `UPDATE invoicer.fiscal_documents SET status = 'needs_attention', attention_reason = 'two documents under one reference',
		updated_at = now() - interval '2 hours' WHERE source_ref = 'p-attention'`)
	db.Exec(t, `UPDATE invoicer.fiscal_documents SET status = 'needs_attention', updated_at = now() WHERE source_ref = 'p-fresh-attention'`)
	db.Exec(t, `INSERT INTO relay.leases (name, holder, token, expires_at) VALUES
		('outbox:ingest.outbox:0', 'relay-a', 1, now() - interval '1 hour'),
		('outbox:invoicer.outbox:0', 'relay-b', 1, now() + interval '10 seconds')`)
}

func reconciler(t *testing.T, db *reconcilertest.DB) *reconcile.Reconciler {
	cfg := detect.Config{PendingAfter: 15 * time.Minute, AttentionAfter: time.Hour,
		ClaimAfter: 10 * time.Minute, LeaseAfter: 5 * time.Minute, MaxPerKind: 100}
	d := detect.New(store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool), store.NewRelayReader(db.Pool), cfg)
	return reconcile.New(store.New(db.Pool), reconcile.Parts{Sweep: noSweep{}, Checks: []reconcile.Checker{d}}, zaptest.NewLogger(t), reconcile.NewMetrics(prometheus.NewRegistry(), false))
}

func open(t *testing.T, db *reconcilertest.DB) []string {
	t.Helper()
	rows, err := store.New(db.Pool).OpenFindings(t.Context(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Kind+" "+r.Reference)
	}
	sort.Strings(out)
	return out
}

func TestStuckWorkBecomesOneFindingEachAndClosesWhenResolved(t *testing.T) {
	db := reconcilertest.NewDB(t)
	stuck(t, db)
	r := reconciler(t, db)
	for range 2 {
		sum, err := r.Once(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Findings != 7 {
			t.Fatalf("findings seen = %d, want 7: %v", sum.Findings, open(t, db))
		}
	}
	var ref string
	if err := db.Pool.QueryRow(t.Context(), "SELECT reference FROM invoicer.fiscal_documents WHERE source_ref = 'p-attention'").Scan(&ref); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(open(t, db), "\n")
	want := []string{
		"document_needs_attention " + ref,
		"outbox_parked ingest.outbox:payment:p1:paid",
		"outbox_parked invoicer.outbox:notification:d1",
		"receipt_claim_expired receipt:4",
		"receipt_pending receipt:2",
		"receipt_parked receipt:1",
		"relay_lease_expired outbox:ingest.outbox:0",
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("open findings lack %q:\n%s", w, got)
		}
	}
	if n := len(open(t, db)); n != 7 {
		t.Fatalf("open findings = %d after two runs, want 7 (one per kind and reference):\n%s", n, got)
	}

	// An operator fixes the parked outbox row and the document; the next run
	// closes exactly those two findings.
	db.Exec(t, `UPDATE ingest.outbox SET parked_at = NULL, published_at = now() WHERE event_key = 'payment:p1:paid'`)
	db.Exec(t, `UPDATE invoicer.fiscal_documents SET status = 'authorized' WHERE source_ref = 'p-attention'`)
	sum, err := r.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Closed != 2 || sum.Findings != 5 {
		t.Fatalf("third run: seen %d, closed %d; want 5 and 2", sum.Findings, sum.Closed)
	}
	after := strings.Join(open(t, db), "\n")
	if strings.Contains(after, "payment:p1:paid") || strings.Contains(after, "document_needs_attention") {
		t.Fatalf("resolved findings still open:\n%s", after)
	}
	var seen int
	if err := db.Pool.QueryRow(t.Context(), "SELECT seen_count FROM reconciler.findings WHERE reference = 'receipt:1'").Scan(&seen); err != nil || seen != 3 {
		t.Fatalf("seen_count of a finding seen by 3 runs = %d (%v)", seen, err)
	}
}
