// Package pgtest gives tests a fresh PostgreSQL database of their own on the
// server named by DATABASE_URL, and fails with directions when there is none.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// Hint tells a developer how to get the dependencies tests need.
const Hint = "run `make test`, or start them with `eval \"$(scripts/stack.sh env)\"` and re-run"

// NewDatabase creates an empty database, drops it when the test ends, and
// returns its connection string.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := os.Getenv("DATABASE_URL")
	if admin == "" {
		tb.Fatalf("DATABASE_URL is not set: tests need a real PostgreSQL; %s", Hint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("PostgreSQL at DATABASE_URL does not answer (%v); %s", err, Hint)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "onceflow_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("create test database: %v", err)
	}
	tb.Cleanup(func() { dropDatabase(tb, admin, name) })
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("parse DATABASE_URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func dropDatabase(tb testing.TB, admin, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Logf("drop test database %s: %v", name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		tb.Logf("drop test database %s: %v", name, err)
	}
}

// NewPool creates a fresh database (NewDatabase), migrates the given
// service schemas into it, and returns a pool on it, closed when the test
// ends.
func NewPool(tb testing.TB, schemas ...string) *pgxpool.Pool {
	tb.Helper()
	return newPool(tb, nil, schemas)
}

// newPool is NewPool's, with the connections' run-time parameters.
func newPool(tb testing.TB, params map[string]string, schemas []string) *pgxpool.Pool {
	tb.Helper()
	dsn := NewDatabase(tb)
	for _, schema := range schemas {
		if err := db.Migrate(context.Background(), dsn, schema); err != nil {
			tb.Fatalf("migrate %s: %v", schema, err)
		}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	maps.Copy(cfg.ConnConfig.RuntimeParams, params)
	cfg.AfterConnect = pg.RegisterTypes
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// WaitBlocked returns once a statement of pool's database whose text
// contains marker waits for a lock, as one does behind a row another
// transaction inserted under the same unique key; it fails tb after a
// minute.
func WaitBlocked(tb testing.TB, pool *pgxpool.Pool, marker string) {
	tb.Helper()
	testwait.Until(tb, time.Minute, 5*time.Millisecond, "a statement containing "+marker+" to wait for a lock", func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`, marker).Scan(&n)
		if err != nil {
			tb.Fatalf("read pg_stat_activity: %v", err)
		}
		return n > 0
	})
}
