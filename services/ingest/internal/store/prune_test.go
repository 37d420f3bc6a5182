package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// The receipts' and the PSP calls' prunes read only the rows older than the
// retention, through the primary key, whatever the connection's planner
// settings: of 20,000 rows within it and 6 before it (5 receipts done and 1
// parked; 5 calls), each deletes the 5 and fetches at most 30 rows, with no
// sequential scan. The retained rows lie in the table in no order of their
// ids, as once freed space is reused, and the connection has bitmap scans
// off (as the relay's have): there PostgreSQL, left to itself, reads the
// whole table instead.
func TestPrunesReadOnlyTheRowsOlderThanTheRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	if err := db.Migrate(ctx, dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	// One connection: the store's statements and the flush of their
	// counts (tableReads) run in the same backend.
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.RuntimeParams["enable_bitmapscan"] = "off"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `
INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, body, status, received_at)
SELECT 'dlocal', 'dlocal', 'psp', 'old:' || g, '\x', CASE WHEN g = 6 THEN 'parked' ELSE 'done' END, now() - interval '10 days'
FROM generate_series(1, 6) g;
INSERT INTO ingest.webhook_receipts (id, source, scope, kind, dedupe_key, body, status) OVERRIDING SYSTEM VALUE
SELECT 100 + g, 'dlocal', 'dlocal', 'psp', 'new:' || g, '\x', 'done' FROM generate_series(1, 20000) g ORDER BY random();
INSERT INTO ingest.psp_fetches (psp, operation, object_id, outcome, latency_ms, fetched_at)
SELECT 'dlocal', 'payment', 'old:' || g, 'found', 5, now() - interval '10 days' FROM generate_series(1, 5) g;
INSERT INTO ingest.psp_fetches (id, psp, operation, object_id, outcome, latency_ms)
SELECT 100 + g, 'dlocal', 'payment', 'new:' || g, 'found', 5 FROM generate_series(1, 20000) g ORDER BY random();
ANALYZE ingest.webhook_receipts, ingest.psp_fetches`)
	if err != nil {
		t.Fatal(err)
	}
	st := New(pool)
	cutoff := time.Now().Add(-7 * 24 * time.Hour)
	for _, c := range []struct {
		table string
		prune func(context.Context, time.Time, int) (int64, error)
	}{
		{"ingest.webhook_receipts", st.PruneReceipts},
		{"ingest.psp_fetches", st.PrunePSPFetches},
	} {
		before := tableReads(t, pool, c.table)
		n, err := c.prune(ctx, cutoff, 1000)
		if err != nil || n != 5 {
			t.Errorf("%s: pruned %d rows, %v; want the 5 finished before the retention", c.table, n, err)
		}
		after := tableReads(t, pool, c.table)
		if scans, fetched := after.seqScans-before.seqScans, after.fetched-before.fetched; scans != 0 || fetched > 30 {
			t.Errorf("%s: the prune ran %d sequential scans and fetched %d rows through indexes; want none and at most 30",
				c.table, scans, fetched)
		}
	}
	var receipts, fetches int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ingest.webhook_receipts), (SELECT count(*) FROM ingest.psp_fetches)`).
		Scan(&receipts, &fetches); err != nil || receipts != 20001 || fetches != 20000 {
		t.Errorf("left %d receipts and %d calls (%v); want 20,001 (the retained and the parked one) and 20,000", receipts, fetches, err)
	}
}

// reads is what PostgreSQL counted of a table's reads.
type reads struct{ seqScans, fetched int64 }

// tableReads returns table's sequential scans and the rows index scans
// fetched from it, once pool's one connection has flushed its own counts:
// pg_stat_force_next_flush makes the backend flush them before it answers
// its next statement.
func tableReads(t *testing.T, pool *pgxpool.Pool, table string) reads {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	var r reads
	err := pool.QueryRow(ctx, `SELECT coalesce(seq_scan, 0), coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables WHERE relid = $1::regclass`,
		table).Scan(&r.seqScans, &r.fetched)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
