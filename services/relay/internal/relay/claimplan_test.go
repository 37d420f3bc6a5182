package relay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/pkg/outbox"
)

// TestShardClaimWalksTheDueIndex checks, on a backlog of 100,000 rows (and as many published), that
// PostgreSQL plans a narrow shard's claim as a walk of the due index in id
// order, stopping after a batch, not as a sort of every pending row: the
// producers' migrations give it statistics on the slot expression.
func TestShardClaimWalksTheDueIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.pool.Exec(ctx, `INSERT INTO ingest.outbox (event_key, event_type, payload)
SELECT 'payment:' || g || ':paid', 'billing.x', '\x00' FROM generate_series(1, 200000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE ingest.outbox SET published_at = now() WHERE id <= 100000`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `ANALYZE ingest.outbox`); err != nil {
		t.Fatal(err)
	}
	slots := outbox.ShardSlots(0, 32)
	rows, err := f.pool.Query(ctx, fmt.Sprintf(`EXPLAIN SELECT id FROM ingest.outbox
WHERE published_at IS NULL AND parked_at IS NULL AND next_attempt_at <= now() AND id > 150000 AND id <> ALL('{}'::bigint[])
  AND %s BETWEEN %d AND %d
ORDER BY id LIMIT 100`, outbox.SlotSQL, slots.From, slots.To))
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.Join(plan, "\n"))
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "Index Scan using outbox_due") || strings.Contains(text, "Sort") {
		t.Errorf("claim of shard 0 of 32 is planned as\n%s\nwant an index scan of outbox_due in id order, no sort", text)
	}
}

// A claim is handed only the rows in flight above its cursor: those at or
// below it are skipped by the cursor already.
func TestClaimSkipsOnlyTheRowsInFlightAboveItsCursor(t *testing.T) {
	t.Parallel()
	p := &pipeline{flying: map[int64]struct{}{3: {}, 7: {}, 9: {}, 12: {}}}
	got := p.inFlightAfter(7)
	slices.Sort(got)
	if !slices.Equal(got, []int64{9, 12}) {
		t.Errorf("in flight after 7 = %v, want [9 12]", got)
	}
	if got := p.inFlightAfter(0); len(got) != 4 {
		t.Errorf("in flight after 0 = %v, want all four", got)
	}
}

// The relay's connections plan every statement for its own arguments and
// without bitmap scans (PoolOptions): with statistics taken while few rows
// were due, a bitmap scan fetched and sorted the whole backlog for each
// claim of a batch, and the bench's third drain of 100,000 rows took 2-3
// times as long as the first two.
func TestRelayConnectionsUseThePoolOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	for name, want := range map[string]string{"plan_cache_mode": "force_custom_plan", "enable_bitmapscan": "off"} {
		var got string
		if err := f.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q on a relay connection, want %q", name, got, want)
		}
	}
}
