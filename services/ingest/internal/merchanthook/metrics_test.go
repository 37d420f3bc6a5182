package merchanthook

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// The deliveries gauge counts the open notifications, pending and parked,
// and reads them through the open rows' index, not the delivered history.
func TestDeliveriesGaugeCountsTheOpenRowsByTheirIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, "ingest")
	st := store.New(pool)
	for _, id := range []string{"document:1:authorized", "document:2:authorized", "document:3:authorized", "document:4:authorized"} {
		queue(t, st, id, "{}")
	}
	if _, err := pool.Exec(ctx, `UPDATE ingest.notification_deliveries SET status = 'delivered', delivered_at = now() WHERE id IN (1, 2)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE ingest.notification_deliveries SET status = 'parked', parked_at = now() WHERE id = 3`); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewPedanticRegistry()
	newMetrics(reg, st)
	want := `
# HELP onceflow_ingest_merchant_deliveries Notifications for the merchant still open, by delivery status (pending, parked).
# TYPE onceflow_ingest_merchant_deliveries gauge
onceflow_ingest_merchant_deliveries{status="parked"} 1
onceflow_ingest_merchant_deliveries{status="pending"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "onceflow_ingest_merchant_deliveries"); err != nil {
		t.Fatal(err)
	}

	// The planner may still pick a scan on a table this small; with scans
	// off, the query must be answerable from the partial index alone.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN SELECT status, count(*)::bigint FROM ingest.notification_deliveries WHERE status <> 'delivered' GROUP BY status ORDER BY status`)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "notification_deliveries_queue") {
		t.Fatalf("the open deliveries' count does not use notification_deliveries_queue:\n%s", plan.String())
	}
}
