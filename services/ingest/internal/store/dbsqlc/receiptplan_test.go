package dbsqlc

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/pgtest"
)

// TestReceiptInsertReadsNoReceiptWhateverItsPlan runs the receipt insert
// by the plan a prepared statement keeps after five executions (made
// without the values) over a table analyzed while it was empty, as on a
// new install, and checks that it reads no receipt: held keys are left to
// the unique index (ON CONFLICT). Looked up with NOT EXISTS, this plan read
// the whole table once a statement, and kept doing so as the table grew
// until autovacuum analyzed it again.
func TestReceiptInsertReadsNoReceiptWhateverItsPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.GenericPlans(t, "ingest")
	pgtest.Exec(t, pool, `ANALYZE ingest.webhook_receipts`,
		`INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, event_id, event_type, body)
SELECT 'dlocal', 'dlocal', 'psp', 'held-' || g, 'held-' || g, 'PAID', '\x7b7d' FROM generate_series(1, 10) g`)
	keys := []string{"new-1", "held-7", "new-2"}
	n := len(keys)
	repeat := func(v string) []string { return []string{v, v, v} }
	token := uuid.New()
	rows, scans := pgtest.RowsRead(t, pool, receiptInsertMany, &token, 30.0, repeat("dlocal"), repeat("dlocal"), repeat("psp"),
		keys, keys, repeat("PAID"), [][]byte{[]byte("{}"), []byte("{}"), []byte("{}")}, make([]bool, n), repeat(""))
	for _, s := range scans {
		if s != "Function Scan " {
			t.Fatalf("the receipt insert scans %v (%.0f rows); want only its batch's values read", scans, rows)
		}
	}
	var inserted int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts WHERE dedupe_key LIKE 'new-%' AND lease_token = $1`, token).Scan(&inserted)
	if err != nil || inserted != 2 {
		t.Fatalf("new receipts inserted under the lease = %d (%v), want 2 (new-1, new-2; held-7 is held)", inserted, err)
	}
}
