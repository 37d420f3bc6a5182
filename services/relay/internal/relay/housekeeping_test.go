package relay

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/outbox"
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
