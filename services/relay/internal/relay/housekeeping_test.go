package relay

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// TestLeaderReportsBacklogAndPrunes checks the backlog gauges against the
// table and that published rows past the retention are deleted in batches
// while pending and parked ones stay.
func TestLeaderReportsBacklogAndPrunes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := testSettings("a")
	s.Backoff = backoff.Policy{Base: time.Hour, Cap: time.Hour} // failed rows stay pending
	s.Retention, s.PruneInterval, s.PruneBatch = time.Millisecond, 50*time.Millisecond, 7
	ob := Outbox{Table: ingestOutbox, Routes: []Route{{Prefix: "billing.", Queue: f.queue}, {Prefix: "stuck.", Queue: f.queue + "-missing"}}}
	reg, m := newMetrics(t)
	start(t, New(f.pool, f.sqs, m, zaptestLogger(t), ob, s))

	var msgs []outbox.Message
	for i := range 20 {
		msgs = append(msgs, message(i, billingType))
	}
	msgs = append(msgs, message(20, "stuck.a"), message(21, "stuck.b"), message(22, "unknown.c"))
	f.insert(t, msgs...)
	if got := f.receive(t, 20); len(got) != 20 {
		t.Fatalf("received %d event keys, want 20", len(got))
	}

	testwait.Until(t, waitTimeout, waitEvery, "published rows pruned", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox`) == 3 && metric(t, reg, "onceflow_relay_pruned_total") == 20
	})
	var oldest time.Time
	if err := f.pool.QueryRow(context.Background(),
		`SELECT min(created_at) FROM ingest.outbox WHERE parked_at IS NULL`).Scan(&oldest); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"onceflow_relay_pending_rows":                             2,
		"onceflow_relay_parked_rows":                              1,
		"onceflow_relay_oldest_pending_created_timestamp_seconds": float64(oldest.UnixNano()) / 1e9,
	}
	testwait.Until(t, waitTimeout, waitEvery, "backlog gauges match the table", func() bool {
		for name, v := range want {
			if metric(t, reg, name) != v {
				return false
			}
		}
		return true
	})
}

// TestPruneNeverHoldsPublishing blocks the leader's prune on a row lock and
// checks that new rows are published meanwhile, then that the prune
// deletes the expired row once the lock goes. Each statement of the leader
// may take a third of the lease's TTL, here 20 minutes, so a prune run
// between batches would hold them far past the test's wait.
func TestPruneNeverHoldsPublishing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	pgtest.Exec(t, f.pool, `INSERT INTO ingest.outbox (event_key, event_type, payload, created_at, published_at)
VALUES ('payment:old:paid', '`+billingType+`', '\x7b7d', now() - interval '2 hours', now() - interval '2 hours')`)
	lock, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	if _, err := lock.Exec(ctx, `SELECT 1 FROM ingest.outbox WHERE event_key = 'payment:old:paid' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	s := testSettings("a")
	s.LeaseTTL, s.PruneInterval = time.Hour, 50*time.Millisecond
	r, reg := f.newRelay(t, s)
	start(t, r)
	testwait.Until(t, waitTimeout, waitEvery, "the prune waiting on the locked row", func() bool {
		return f.count(t, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM "ingest"."outbox"%'`) == 1
	})
	f.insert(t, message(1, billingType), message(2, billingType))
	if got := f.receive(t, 2); len(got) != 2 {
		t.Fatalf("received %d event keys while the prune waited, want 2", len(got))
	}

	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, waitTimeout, waitEvery, "the expired row pruned once the lock went", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox WHERE event_key = 'payment:old:paid'`) == 0 &&
			metric(t, reg, "onceflow_relay_pruned_total") == 1
	})
	if n := f.count(t, `SELECT count(*) FROM ingest.outbox WHERE published_at IS NOT NULL`); n != 2 {
		t.Fatalf("%d published rows left, want the 2 within the retention", n)
	}
}
