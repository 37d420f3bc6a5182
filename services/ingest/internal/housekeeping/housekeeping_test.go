package housekeeping_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/services/ingest/internal/housekeeping"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

func pool(t *testing.T) *pgxpool.Pool {
	dsn := pgtest.NewDatabase(t)
	if err := db.Migrate(t.Context(), dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// receipt inserts a receipt of the status received age ago.
func receipt(t *testing.T, p *pgxpool.Pool, key, status string, age time.Duration) {
	t.Helper()
	_, err := p.Exec(t.Context(), `INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, body, status, received_at)
		VALUES ('dlocal', 'dlocal', 'psp', $1, '{}', $2, now() - make_interval(secs => $3))`, key, status, age.Seconds())
	if err != nil {
		t.Fatal(err)
	}
}

// Finished receipts past retention go, in batches; pending and parked ones
// and recent ones stay whatever their age.
func TestPruneDeletesOnlyFinishedReceiptsPastRetention(t *testing.T) {
	p := pool(t)
	week := 7 * 24 * time.Hour
	for i := range 7 {
		receipt(t, p, "old-done-"+string(rune('a'+i)), "done", week+time.Hour)
	}
	receipt(t, p, "old-rejected", "rejected", week+time.Hour)
	receipt(t, p, "old-pending", "pending", week+time.Hour)
	receipt(t, p, "old-parked", "parked", week+time.Hour)
	receipt(t, p, "new-done", "done", time.Hour)
	_, err := p.Exec(t.Context(), `INSERT INTO ingest.notification_deliveries (event_id, event_type, payload, status, delivered_at, parked_at) VALUES
		('old-delivered', 't', '{}', 'delivered', now() - interval '8 days', NULL),
		('new-delivered', 't', '{}', 'delivered', now() - interval '1 hour', NULL),
		('old-parked', 't', '{}', 'parked', NULL, now() - interval '8 days'),
		('old-pending', 't', '{}', 'pending', NULL, NULL)`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Exec(t.Context(), `INSERT INTO ingest.idempotency_keys (route, key, request_hash, created_at) VALUES
		('/v1/customers', 'old', '\x00', now() - interval '2 days'), ('/v1/customers', 'new', '\x00', now())`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Exec(t.Context(), `INSERT INTO ingest.psp_fetches (psp, operation, object_id, outcome, latency_ms, fetched_at) VALUES
		('dlocal', 'payment', 'old-fetch', 'found', 5, now() - interval '8 days'), ('dlocal', 'payment', 'new-fetch', 'found', 5, now())`)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	pr := housekeeping.NewPruner(store.New(p), zap.NewNop(), reg, housekeeping.Config{
		ReceiptRetention: week, IdempotencyRetention: 24 * time.Hour, NotificationRetention: week, Interval: time.Minute, Batch: 3,
	})
	if err := pr.Prune(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, _ := p.Query(t.Context(), "SELECT dedupe_key FROM ingest.webhook_receipts ORDER BY dedupe_key")
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		left = append(left, k)
	}
	if got := len(left); got != 3 || left[0] != "new-done" || left[1] != "old-parked" || left[2] != "old-pending" {
		t.Fatalf("receipts left = %v, want new-done, old-parked, old-pending", left)
	}
	var keys int
	_ = p.QueryRow(t.Context(), "SELECT count(*) FROM ingest.idempotency_keys WHERE key = 'new'").Scan(&keys)
	if keys != 1 {
		t.Fatal("a fresh idempotency key was pruned")
	}
	var notes []string
	rows, _ = p.Query(t.Context(), "SELECT event_id FROM ingest.notification_deliveries ORDER BY event_id")
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		notes = append(notes, k)
	}
	if len(notes) != 3 || notes[0] != "new-delivered" || notes[1] != "old-parked" || notes[2] != "old-pending" {
		t.Fatalf("notifications left = %v, want new-delivered, old-parked, old-pending", notes)
	}
	var fetches []string
	rows, _ = p.Query(t.Context(), "SELECT object_id FROM ingest.psp_fetches")
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		fetches = append(fetches, k)
	}
	if len(fetches) != 1 || fetches[0] != "new-fetch" {
		t.Fatalf("PSP calls left = %v, want only the one within the receipts' retention", fetches)
	}
	if n := testutil.CollectAndCount(reg, "onceflow_ingest_pruned_total"); n != 4 {
		t.Fatalf("pruned metric series = %d, want one per table", n)
	}
}

// The backlog gauges: pending receipts and the oldest's arrival, and when
// the earliest scheduled order poll is due (an order off the schedule does
// not count).
func TestBacklogReportsPendingReceiptsAndPolls(t *testing.T) {
	p := pool(t)
	b := housekeeping.NewBacklog(store.New(p))
	if got := scrape(t, b); got["onceflow_ingest_receipts_pending"] != 0 || got["onceflow_ingest_receipts_oldest_pending_timestamp_seconds"] != 0 ||
		got["onceflow_ingest_poll_earliest_due_timestamp_seconds"] != 0 {
		t.Fatalf("backlog with no receipts nor orders = %v, want zeros", got)
	}
	if _, err := p.Exec(t.Context(), `WITH c AS (INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name) VALUES ('CI', 'UY', '12345672', 'x') RETURNING id)
INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, next_poll_at)
SELECT 'o-' || g, c.id, 100, 'UYU', CASE g WHEN 1 THEN now() - interval '20 minutes' WHEN 2 THEN now() + interval '5 minutes' END
FROM c, generate_series(1, 3) g`); err != nil {
		t.Fatal(err)
	}
	receipt(t, p, "a", "pending", time.Hour)
	receipt(t, p, "b", "pending", time.Minute)
	receipt(t, p, "c", "done", 2*time.Hour)
	got := scrape(t, b)
	if got["onceflow_ingest_receipts_pending"] != 2 {
		t.Fatalf("pending = %v, want 2", got["onceflow_ingest_receipts_pending"])
	}
	oldest := time.Unix(int64(got["onceflow_ingest_receipts_oldest_pending_timestamp_seconds"]), 0)
	if d := time.Since(oldest); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("oldest pending arrived %s ago, want about 1h", d)
	}
	due := time.Unix(int64(got["onceflow_ingest_poll_earliest_due_timestamp_seconds"]), 0)
	if d := time.Since(due); d < 19*time.Minute || d > 21*time.Minute {
		t.Fatalf("earliest poll due %s ago, want about 20m", d)
	}
}

// scrape gathers c's gauges by name.
func scrape(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, f := range families {
		values[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
	}
	return values
}
