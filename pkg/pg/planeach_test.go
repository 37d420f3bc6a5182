package pg_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// newKeys is a batch look-up as the hot inserts make one: the keys of a
// batch that the table does not hold yet.
const newKeys = `-- name: NewKeys :many
SELECT u.key FROM unnest($1::text[]) AS u(key)
WHERE NOT EXISTS (SELECT 1 FROM held h WHERE h.key = u.key)`

// A statement that settled on its plan while its table was empty keeps
// scanning the whole table once the table has grown; through PlanEach it
// probes the primary key instead, and finds the same keys.
func TestPlanEachProbesATableThatGrewAfterTheStatementSettled(t *testing.T) {
	ctx := context.Background()
	conn, err := pgtest.NewPool(t).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, sql := range []string{
		`CREATE TABLE held (key text PRIMARY KEY) WITH (autovacuum_enabled = false)`,
		`ANALYZE held`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	prepared, planned := pg.DB(conn), pg.PlanEach(conn, "NewKeys")
	for range 10 {
		for _, db := range []pg.DB{prepared, planned} {
			if got := keys(t, db, "a", "b"); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("empty table: new keys %v, want [a b]", got)
			}
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO held SELECT 'k' || g FROM generate_series(1, 50000) g`); err != nil {
		t.Fatal(err)
	}

	seq, idx, got := scans(t, conn, func(tx pgx.Tx) pg.DB { return tx })
	if seq == 0 || !slices.Equal(got, []string{"a"}) {
		t.Fatalf("prepared statement: %d sequential scans, %d index scans, new keys %v; want the plan of the empty table, a sequential scan, and [a]", seq, idx, got)
	}
	seq, idx, got = scans(t, conn, func(tx pgx.Tx) pg.DB { return pg.PlanEach(tx, "NewKeys") })
	if seq != 0 || idx == 0 || !slices.Equal(got, []string{"a"}) {
		t.Fatalf("planned each time: %d sequential scans, %d index scans, new keys %v; want index scans only and [a]", seq, idx, got)
	}
}

// scans runs newKeys for a held and an unheld key in a transaction on
// conn, through the DB wrap makes of it, and returns the scans of held it
// made (the counters' advance: they also hold earlier transactions' scans
// not yet reported) and the new keys.
func scans(t *testing.T, conn *pgxpool.Conn, wrap func(pgx.Tx) pg.DB) (seq, idx int64, got []string) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	read := func() (seq, idx int64) {
		err := tx.QueryRow(ctx, `SELECT coalesce(sum(seq_scan), 0)::bigint, coalesce(sum(idx_scan), 0)::bigint
			FROM pg_stat_xact_user_tables WHERE relname = 'held'`).Scan(&seq, &idx)
		if err != nil {
			t.Fatal(err)
		}
		return seq, idx
	}
	seq0, idx0 := read()
	got = keys(t, wrap(tx), "k7", "a")
	seq, idx = read()
	return seq - seq0, idx - idx0, got
}

func keys(t *testing.T, db pg.DB, batch ...string) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), newKeys, batch)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}
