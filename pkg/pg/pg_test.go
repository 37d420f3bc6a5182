package pg_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// A pool from Open reads a uuid column back as a google/uuid UUID (pgx's
// own type map gives [16]byte), and sends one, or a nil pointer to one, as
// the value it is.
func TestOpenKnowsUUIDs(t *testing.T) {
	ctx := context.Background()
	pool, err := pg.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	id := uuid.New()
	var back uuid.UUID
	var text string
	if err := pool.QueryRow(ctx, `SELECT $1::uuid, $1::uuid::text`, id).Scan(&back, &text); err != nil {
		t.Fatal(err)
	}
	if back != id || text != id.String() {
		t.Fatalf("sent %s, read back %s (as text %q)", id, back, text)
	}

	rows, err := pool.Query(ctx, `SELECT $1::uuid`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("no row: %v", rows.Err())
	}
	values, err := rows.Values()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := values[0].(uuid.UUID); !ok || got != id {
		t.Fatalf("Values() gave %T %v, want uuid.UUID %s", values[0], values[0], id)
	}
	rows.Close()

	var none *uuid.UUID
	var null bool
	if err := pool.QueryRow(ctx, `SELECT $1::uuid IS NULL, $1::uuid`, none).Scan(&null, &none); err != nil {
		t.Fatal(err)
	}
	if !null || none != nil {
		t.Fatalf("a nil *uuid.UUID came back as NULL=%v, %v", null, none)
	}
	some := &id
	if err := pool.QueryRow(ctx, `SELECT $1::uuid`, some).Scan(&none); err != nil {
		t.Fatal(err)
	}
	if none == nil || *none != id {
		t.Fatalf("*uuid.UUID %s came back as %v", id, none)
	}
}
