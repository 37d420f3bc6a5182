package lease_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/lease"
)

func layout(prefix string, n int) *lease.Layout {
	lay := &lease.Layout{Prefix: prefix}
	for i := range n {
		lay.Names = append(lay.Names, fmt.Sprintf("%s%d/%d", prefix, i, n))
	}
	return lay
}

func expire(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE s.leases SET expires_at = now() - interval '1 second' WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}
}

// TestLayoutsExclude holds a lease of a four-lease layout and shows that no
// lease of an eight-lease layout of the same job is taken until every lease
// of the first is released or expired; then the old rows are retired and
// the old layout is the one kept out.
func TestLayoutsExclude(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	four, eight := layout("job:", 4), layout("job:", 8)
	a0 := lease.NewInLayout(pool, "s", four, four.Names[0], "a", time.Minute)
	a1 := lease.NewInLayout(pool, "s", four, four.Names[1], "a", time.Minute)
	b5 := lease.NewInLayout(pool, "s", eight, eight.Names[5], "b", time.Minute)
	other := lease.NewInLayout(pool, "s", layout("another:", 8), "another:0/8", "c", time.Minute)

	tok0, ok, err := a0.Acquire(ctx)
	if err != nil || !ok {
		t.Fatalf("a0.Acquire = %v, %v; want the free lease", ok, err)
	}
	tok1, ok, err := a1.Acquire(ctx)
	if err != nil || !ok {
		t.Fatalf("a1.Acquire = %v, %v; want the free lease of the same layout", ok, err)
	}
	if _, ok, err := other.Acquire(ctx); err != nil || !ok {
		t.Fatalf("lease of another job = %v, %v; want it free: jobs do not exclude each other", ok, err)
	}
	if _, ok, err := b5.Acquire(ctx); err != nil || ok {
		t.Fatalf("b5.Acquire while layout 4 is live = %v, %v; want false", ok, err)
	}
	if err := a0.Release(ctx, tok0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b5.Acquire(ctx); err != nil || ok {
		t.Fatalf("b5.Acquire while one lease of layout 4 is live = %v, %v; want false", ok, err)
	}
	expire(t, pool, four.Names[1])
	if _, ok, err := b5.Acquire(ctx); err != nil || !ok {
		t.Fatalf("b5.Acquire once layout 4 lapsed = %v, %v; want true", ok, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM s.leases WHERE name LIKE 'job:%/4'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("rows of the retired layout = %d (%v), want 0", left, err)
	}
	if _, ok, err := a1.Acquire(ctx); err != nil || ok {
		t.Fatalf("a1 renewing after its lease lapsed under layout 8 = %v, %v; want false", ok, err)
	}
	if err := a1.Fence(ctx, mustBegin(t, pool), tok1); !errors.Is(err, lease.ErrDeposed) {
		t.Errorf("fence of the lapsed layout-4 lease = %v, want ErrDeposed", err)
	}
}

func TestLiveListsHoldersOfLiveLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	lay := layout("job:", 3)
	for i, holder := range []string{"a", "b", "a"} {
		if _, ok, err := lease.NewInLayout(pool, "s", lay, lay.Names[i], holder, time.Minute).Acquire(ctx); err != nil || !ok {
			t.Fatalf("acquire %s: %v, %v", lay.Names[i], ok, err)
		}
	}
	expire(t, pool, lay.Names[1])
	got, err := lease.Live(ctx, pool, "s", "job:")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{lay.Names[0]: "a", lay.Names[2]: "a"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Live = %v, want %v", got, want)
	}
}

func TestRosterCountsLiveMembers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	a := lease.NewRoster(pool, "s", "g", "a", time.Minute)
	b := lease.NewRoster(pool, "s", "g", "b", time.Minute)
	elsewhere := lease.NewRoster(pool, "s", "h", "c", time.Minute)
	beat := func(r *lease.Roster, want int) {
		t.Helper()
		if n, err := r.Beat(ctx); err != nil || n != want {
			t.Fatalf("Beat = %d, %v; want %d", n, err, want)
		}
	}
	beat(a, 1)
	beat(b, 2)
	beat(elsewhere, 1)
	beat(a, 2)
	if _, err := pool.Exec(ctx, `UPDATE s.lease_members SET expires_at = now() - interval '1 second' WHERE holder = 'b'`); err != nil {
		t.Fatal(err)
	}
	beat(a, 1)
	beat(b, 2)
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	beat(a, 1)
	if _, err := pool.Exec(ctx, `UPDATE s.lease_members SET expires_at = now() - interval '2 hours' WHERE holder = 'a'`); err != nil {
		t.Fatal(err)
	}
	beat(elsewhere, 1)
	beat(b, 1)
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM s.lease_members WHERE grp = 'g'`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("rows of group g = %d (%v), want 1: the long-dead member is deleted", rows, err)
	}
}

func mustBegin(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}
