package outbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/outbox"
)

// seed inserts n rows, publishes the first published of them and parks the
// next parked, and returns their ids in order.
func seed(t *testing.T, pool *pgxpool.Pool, n, published, parked int) []int64 {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		insert(t, pool, fmt.Sprintf("payment:%d:paid", i))
	}
	rows, err := outbox.Due(ctx, pool, table, n, 0, nil)
	if err != nil || len(rows) != n {
		t.Fatalf("Due = %d rows, %v; want %d", len(rows), err, n)
	}
	ids := make([]int64, n)
	for i, r := range rows {
		ids[i] = r.ID
	}
	if err := outbox.MarkPublished(ctx, pool, table, ids[:published]); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[published : published+parked] {
		if err := outbox.MarkFailed(ctx, pool, table, id, "too big", time.Now(), true); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func TestListParkedAndUnpark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	ids := seed(t, pool, 6, 1, 3)

	first, err := outbox.ListParked(ctx, pool, table, 0, 2)
	if err != nil || len(first) != 2 || first[0].ID != ids[1] || first[0].Reason != "too big" || first[0].Attempts != 1 {
		t.Fatalf("ListParked page 1 = %+v, %v; want rows %d and %d parked for 'too big'", first, err, ids[1], ids[2])
	}
	rest, err := outbox.ListParked(ctx, pool, table, first[1].ID, 10)
	if err != nil || len(rest) != 1 || rest[0].ID != ids[3] {
		t.Fatalf("ListParked page 2 = %+v, %v; want row %d", rest, err, ids[3])
	}

	if ok, err := outbox.Unpark(ctx, pool, table, ids[1]); err != nil || !ok {
		t.Fatalf("Unpark parked row = %v, %v; want true", ok, err)
	}
	for _, id := range []int64{ids[1], ids[0], ids[4], 9999} {
		if ok, err := outbox.Unpark(ctx, pool, table, id); err != nil || ok {
			t.Errorf("Unpark row %d = %v, %v; want false: it is not parked", id, ok, err)
		}
	}
	due, err := outbox.Due(ctx, pool, table, 10, 0, nil)
	if err != nil || len(due) != 3 || due[0].ID != ids[1] || due[0].Attempts != 0 {
		t.Fatalf("Due after unpark = %+v, %v; want the unparked row with 0 attempts and the two fresh ones", due, err)
	}
}

func TestReplayRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	ids := seed(t, pool, 8, 6, 1)

	n, last, err := outbox.Replay(ctx, pool, table, outbox.Range{FromID: ids[1], ToID: ids[6]}, 3)
	if err != nil || n != 3 || last != ids[3] {
		t.Fatalf("Replay ids %d..%d limit 3 = %d, %d, %v; want 3 rows up to %d", ids[1], ids[6], n, last, err, ids[3])
	}
	n, last, err = outbox.Replay(ctx, pool, table, outbox.Range{FromID: last + 1, ToID: ids[6]}, 3)
	if err != nil || n != 2 || last != ids[5] {
		t.Fatalf("Replay continued = %d, %d, %v; want the 2 published rows left, up to %d (the parked one is skipped)", n, last, err, ids[5])
	}
	if n, _, err := outbox.Replay(ctx, pool, table, outbox.Range{From: time.Now().Add(time.Hour)}, 100); err != nil || n != 0 {
		t.Fatalf("Replay of a future time range = %d, %v; want 0", n, err)
	}
	n, _, err = outbox.Replay(ctx, pool, table, outbox.Range{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)}, 100)
	if err != nil || n != 1 {
		t.Fatalf("Replay of the last hour = %d, %v; want 1, the only row still published", n, err)
	}
	due, err := outbox.Due(ctx, pool, table, 10, 0, nil)
	if err != nil || len(due) != 7 {
		t.Fatalf("Due after replay = %d rows, %v; want 7 (every row but the parked one)", len(due), err)
	}
}

func TestPruneAndStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	seed(t, pool, 7, 4, 1)

	s, err := outbox.ReadStats(ctx, pool, table)
	if err != nil || s.Pending != 2 || s.Parked != 1 || s.OldestPending.IsZero() {
		t.Fatalf("ReadStats = %+v, %v; want 2 pending, 1 parked and an oldest time", s, err)
	}
	if n, err := outbox.Prune(ctx, pool, table, time.Now().Add(-time.Hour), 10); err != nil || n != 0 {
		t.Fatalf("Prune of rows published over an hour ago = %d, %v; want 0", n, err)
	}
	cutoff := time.Now().Add(time.Second)
	if n, err := outbox.Prune(ctx, pool, table, cutoff, 3); err != nil || n != 3 {
		t.Fatalf("Prune limit 3 = %d, %v; want 3", n, err)
	}
	if n, err := outbox.Prune(ctx, pool, table, cutoff, 3); err != nil || n != 1 {
		t.Fatalf("Prune again = %d, %v; want the last published row", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM p.outbox").Scan(&left); err != nil || left != 3 {
		t.Fatalf("rows left = %d (%v); want 3, pending and parked ones kept", left, err)
	}

	if _, err := pool.Exec(ctx, "UPDATE p.outbox SET published_at = now() WHERE parked_at IS NULL"); err != nil {
		t.Fatal(err)
	}
	s, err = outbox.ReadStats(ctx, pool, table)
	if err != nil || s.Pending != 0 || s.Parked != 1 || !s.OldestPending.IsZero() {
		t.Fatalf("ReadStats with nothing pending = %+v, %v; want 0 pending, 1 parked, zero time", s, err)
	}
}
