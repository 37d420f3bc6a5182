package outbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/onceflow/onceflow/pkg/outbox"
)

func TestShardSlotsCoverEverySlotOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3, 4, 7, 8, 1000, outbox.SlotCount} {
		next := 0
		for i := range n {
			s := outbox.ShardSlots(i, n)
			if s.From != next || s.To < s.From {
				t.Fatalf("shard %d of %d = %+v; want a non-empty range starting at %d", i, n, s, next)
			}
			next = s.To + 1
		}
		if next != outbox.SlotCount {
			t.Errorf("%d shards end at slot %d, want %d", n, next-1, outbox.SlotCount-1)
		}
	}
	// Doubling the shards splits each shard in two: a row's new shard is
	// inside its old one.
	for i := range 8 {
		old, half := outbox.ShardSlots(i/2, 4), outbox.ShardSlots(i, 8)
		if half.From < old.From || half.To > old.To {
			t.Errorf("shard %d of 8 = %+v is not inside shard %d of 4 = %+v", i, half, i/2, old)
		}
	}
}

// TestDueInSplitsRowsByShard claims every row through each shard's slots
// for several shard counts: each row is claimed by exactly one shard.
func TestDueInSplitsRowsByShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	const rows = 300
	for i := range rows {
		insert(t, pool, fmt.Sprintf("payment:%d:paid", i))
	}
	for _, n := range []int{1, 4, 8} {
		seen := map[int64]int{}
		busy := 0
		for i := range n {
			got, err := outbox.DueIn(ctx, pool, table, outbox.ShardSlots(i, n), rows, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > 0 {
				busy++
			}
			for _, r := range got {
				seen[r.ID]++
			}
		}
		if len(seen) != rows {
			t.Errorf("%d shards claimed %d distinct rows, want %d", n, len(seen), rows)
		}
		for id, c := range seen {
			if c != 1 {
				t.Errorf("%d shards: row %d claimed by %d shards", n, id, c)
			}
		}
		if busy != n {
			t.Errorf("%d shards: only %d had rows; the hash does not spread %d keys", n, busy, rows)
		}
	}
}
