package pgcluster

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A committed row survives a crash of the server.
func TestCommittedRowSurvivesACrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove(context.Background())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE t (id int); INSERT INTO t VALUES (1)")
	if err := c.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, c.DSN("postgres")); err == nil {
		t.Fatal("connected to a crashed server")
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after crash recovery = %d (%v), want 1", n, err)
	}
}
