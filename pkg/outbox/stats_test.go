package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// The backlog gauges' query reads the services' outboxes through their
// partial indexes on pending and parked rows, never scanning the published
// history: with scans off the plan uses both indexes and nothing else.
func TestStatsReadOnlyTheUnpublishedRowsIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, schema := range []string{"ingest", "invoicer"} {
		pool := migrated(t, schema)
		var plan strings.Builder
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "EXPLAIN "+outbox.StatsSQL(outbox.Table{Schema: schema, Name: "outbox"}))
			if err != nil {
				return err
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			plan.WriteString(strings.Join(lines, "\n"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		p := plan.String()
		if !strings.Contains(p, "outbox_due") || !strings.Contains(p, "outbox_parked") || strings.Contains(p, "Seq Scan") || strings.Contains(p, "outbox_pkey") {
			t.Errorf("%s.outbox stats plan does not read only outbox_due and outbox_parked:\n%s", schema, p)
		}
	}
}

// Prune reads only the rows older than the retention: on an outbox of
// 20,000 rows published within it, and 5 published and 1 parked before it,
// it deletes the 5 and reads no more than the 6 old rows and the first
// retained one twice (once for the bound, once to choose), through the
// primary key, in each service's schema. The retained rows lie in the
// table in no order of their ids, as once freed space is reused: the
// order in which PostgreSQL, left to itself, reads the whole table instead.
func TestPruneReadsOnlyTheRowsOlderThanTheRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, schema := range []string{"ingest", "invoicer"} {
		pool := migrated(t, schema)
		tbl := outbox.Table{Schema: schema, Name: "outbox"}
		_, err := pool.Exec(ctx, `INSERT INTO `+schema+`.outbox (event_key, event_type, payload, created_at, published_at, parked_at)
SELECT 'old:' || g, 'billing.test', '{}', now() - interval '10 days', CASE WHEN g < 6 THEN now() - interval '9 days' END,
       CASE WHEN g = 6 THEN now() - interval '9 days' END FROM generate_series(1, 6) g;
INSERT INTO `+schema+`.outbox (id, event_key, event_type, payload, published_at) OVERRIDING SYSTEM VALUE
SELECT 100 + g, 'new:' || g, 'billing.test', '{}', now() FROM generate_series(1, 20000) g ORDER BY random();
ANALYZE `+schema+`.outbox`)
		if err != nil {
			t.Fatal(err)
		}
		cutoff := time.Now().Add(-7 * 24 * time.Hour)
		// As the relay's connections were before the setting: without
		// bitmap scans, PostgreSQL reads the whole table here.
		if plan := explainPrune(t, pool, tbl, cutoff, `SET LOCAL enable_bitmapscan = off`); !strings.Contains(plan, "Seq Scan") {
			t.Logf("%s.outbox: without the setting PostgreSQL walks the key here too:\n%s", schema, plan)
		}
		plan := explainPrune(t, pool, tbl, cutoff, pg.WalkKeys)
		if read := rowsRead(plan); read > 14 || strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "outbox_pkey") {
			t.Errorf("%s.outbox prune read %d rows (want at most 14, through outbox_pkey):\n%s", schema, read, plan)
		}
		if n, err := outbox.Prune(ctx, pool, tbl, cutoff, 1000); err != nil || n != 5 {
			t.Errorf("%s.outbox Prune = %d, %v; want the 5 rows published before the retention", schema, n, err)
		}
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.outbox`).Scan(&left); err != nil || left != 20001 {
			t.Errorf("%s.outbox holds %d rows after pruning (%v), want 20,001: the retained and the parked one", schema, left, err)
		}
	}
}

// explainPrune returns the plan of Prune's selection of ids, run by EXPLAIN
// ANALYZE in a transaction that first runs setting (none when empty).
func explainPrune(t *testing.T, pool *pgxpool.Pool, tbl outbox.Table, cutoff time.Time, setting string) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if setting != "" {
			if _, err := tx.Exec(ctx, setting); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS off, TIMING off) "+outbox.PruneSQL(tbl), cutoff, 1000)
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// rowsRead adds up what each scan of an EXPLAIN ANALYZE plan returned and
// what its filter removed.
func rowsRead(plan string) int {
	n := 0
	for _, line := range strings.Split(plan, "\n") {
		var v int
		switch {
		case strings.Contains(line, "Scan") && strings.Contains(line, "rows="):
			_, _ = fmt.Sscanf(line[strings.Index(line, "rows="):], "rows=%d", &v)
		case strings.Contains(line, "Rows Removed by Filter:"):
			_, _ = fmt.Sscanf(strings.TrimSpace(line), "Rows Removed by Filter: %d", &v)
		}
		n += v
	}
	return n
}

// migrated returns a pool on a new database holding the service schema
// schema, migrated.
func migrated(t *testing.T, schema string) *pgxpool.Pool {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	if err := db.Migrate(context.Background(), dsn, schema); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
