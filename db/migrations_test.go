package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

func TestMigrateTwiceIsHarmless(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	for range 2 {
		for _, schema := range db.Schemas {
			if err := db.Migrate(ctx, dsn, schema); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestUnknownSchemaIsAnError(t *testing.T) {
	t.Parallel()
	if _, err := db.Migrations("billing"); err == nil {
		t.Fatal("want an error for a schema without migrations")
	}
}

// TestOutboxShape keeps every producer's outbox table identical, since the
// relay and pkg/outbox treat them as one contract.
func TestOutboxShape(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	for _, schema := range db.Schemas {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	shape := func(schema string) []string {
		rows, err := conn.Query(ctx, `SELECT column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'outbox' ORDER BY ordinal_position`, schema)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	want := shape("ingest")
	if len(want) != 12 {
		t.Fatalf("ingest.outbox has %d columns, want the 12 of the contract: %v", len(want), want)
	}
	got := shape("invoicer")
	if len(got) != len(want) {
		t.Fatalf("invoicer.outbox columns %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %d: invoicer.outbox has %q, ingest.outbox %q", i, got[i], want[i])
		}
	}
}
