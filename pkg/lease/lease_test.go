package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	_, err = pool.Exec(ctx, `CREATE SCHEMA s; CREATE TABLE s.leases (name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL);
CREATE TABLE s.lease_members (grp text, holder text, expires_at timestamptz NOT NULL, PRIMARY KEY (grp, holder))`)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestLeaseHandOverAndFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	a := lease.New(pool, "s", "relay", "a", time.Minute)
	b := lease.New(pool, "s", "relay", "b", time.Minute)

	tokA, ok, err := a.Acquire(ctx)
	if err != nil || !ok || tokA != 1 {
		t.Fatalf("a.Acquire = %d, %v, %v; want 1, true", tokA, ok, err)
	}
	if _, ok, err := b.Acquire(ctx); err != nil || ok {
		t.Fatalf("b took a held lease: ok=%v err=%v", ok, err)
	}
	if again, ok, _ := a.Acquire(ctx); !ok || again != tokA {
		t.Fatalf("renewal changed the token to %d (ok=%v)", again, ok)
	}

	// a stalls past its TTL: b takes over with a new token.
	if _, err := pool.Exec(ctx, `UPDATE s.leases SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	tokB, ok, err := b.Acquire(ctx)
	if err != nil || !ok || tokB != tokA+1 {
		t.Fatalf("b.Acquire after expiry = %d, %v, %v; want %d, true", tokB, ok, err, tokA+1)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := a.Fence(ctx, tx, tokA); !errors.Is(err, lease.ErrDeposed) {
		t.Fatalf("deposed a.Fence = %v, want ErrDeposed", err)
	}
	tx2, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback(ctx)
	if err := b.Fence(ctx, tx2, tokB); err != nil {
		t.Fatalf("leader b.Fence = %v", err)
	}
}

func TestReleaseLetsStandbyIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	a := lease.New(pool, "s", "x", "a", time.Hour)
	b := lease.New(pool, "s", "x", "b", time.Hour)
	tok, _, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.Acquire(ctx); err != nil || !ok {
		t.Fatalf("standby could not take a released lease: ok=%v err=%v", ok, err)
	}
}
