package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// TestServeSplitsOutboxesIntoShards runs the real relay with RELAY_SHARDS=4:
// alone, it holds the four shard leases of each outbox and publishes.
func TestServeSplitsOutboxesIntoShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	for _, schema := range []string{"ingest", Schema} {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			t.Fatal(err)
		}
	}
	client := sqstest.Client(t)
	queueName, queueURL := sqstest.Queue(t, client, "relayshards", 5)

	cfg := testConfig(t, dsn, "ingest.outbox=billing.>"+queueName)
	cfg.Shards = 4
	addr := startServe(t, cfg)

	insertRow(t, dsn, "payment:1:paid")
	if key := receiveOne(t, client, queueURL); key != "payment:1:paid" {
		t.Fatalf("received event key %q, want payment:1:paid", key)
	}
	wants := []string{
		`onceflow_relay_shards{outbox="ingest.outbox"} 4`,
		`onceflow_relay_shards_held{outbox="ingest.outbox"} 4`,
	}
	testwait.Until(t, 10*time.Second, 50*time.Millisecond, "the four shards held", func() bool {
		_, metrics := get(t, addr, "/metrics")
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				return false
			}
		}
		return true
	})
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx,
		`SELECT count(*) FROM relay.leases WHERE name LIKE 'outbox:ingest.outbox:%/4' AND holder = 'component-test' AND expires_at > now()`).Scan(&n); err != nil || n != 4 {
		t.Errorf("live 4-shard leases held by the relay = %d (%v), want 4", n, err)
	}
}
