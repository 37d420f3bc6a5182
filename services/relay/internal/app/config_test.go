package app

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/service"
)

// load reads a Config from env alone, as service.Main reads the process's.
func load(env map[string]string) (config.Loaded[Config], error) {
	return config.LoadFrom[Config](func(k string) string { return env[k] })
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	loaded, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := loaded.Value
	if c.BatchSize != 500 || c.MaxAttempts != 10 || c.BackoffBase != time.Second || c.BackoffCap != 5*time.Minute ||
		c.PollInterval != time.Second || c.LeaseTTL != 15*time.Second || c.MaxMessageBytes != 1048576 ||
		c.MaxBatchBytes != 1048576 || c.Retention != 7*24*time.Hour || c.PruneInterval != time.Minute ||
		c.PruneBatch != 1000 || c.StatsInterval != 15*time.Second || c.Shards != 1 || c.settings().Shards != 1 {
		t.Errorf("defaults = %+v", c)
	}
	if !strings.Contains(c.Routes, "ingest.outbox=billing.>onceflow-billing") {
		t.Errorf("RELAY_ROUTES default = %q", c.Routes)
	}
	if s := c.settings(); s.Holder == "" || s.Holder == c.settings().Holder {
		t.Errorf("default holders %q are not unique per process", s.Holder)
	}
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct{ key, value string }{
		{"RELAY_ROUTES", "ingest.Outbox=billing.>q"},
		{"RELAY_ROUTES", "ingest.outbox=billing."},
		{"RELAY_SIGNING_KEY", "relay-1:short"},
		{"RELAY_SIGNING_KEY", "no-secret"},
		{"RELAY_BATCH_SIZE", "0"},
		{"RELAY_BATCH_SIZE", "many"},
		{"RELAY_MAX_ATTEMPTS", "0"},
		{"RELAY_BACKOFF_BASE", "0s"},
		{"RELAY_BACKOFF_CAP", "1ms"},
		{"RELAY_POLL_INTERVAL", "-1s"},
		{"RELAY_LEASE_TTL", "0s"},
		{"RELAY_MAX_MESSAGE_BYTES", "2000000"},
		{"RELAY_MAX_BATCH_BYTES", "1000"},
		{"RELAY_RETENTION", "0s"},
		{"RELAY_PRUNE_INTERVAL", "0s"},
		{"RELAY_PRUNE_BATCH", "0"},
		{"RELAY_STATS_INTERVAL", "0s"},
		{"RELAY_SHARDS", "0"},
		{"RELAY_SHARDS", "1025"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			t.Parallel()
			_, err := load(map[string]string{tt.key: tt.value})
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("Load with %s=%s: error %v, want one naming %s", tt.key, tt.value, err, tt.key)
			}
		})
	}
}

func TestRunMigrate(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	env := func(k string) string { return map[string]string{"DATABASE_URL": dsn}[k] }
	ctx := context.Background()
	if err := service.Main(ctx, Spec, env, []string{"migrate"}, io.Discard); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM relay.leases`).Scan(&n); err != nil {
		t.Fatalf("relay.leases after migrate: %v", err)
	}
	if err := service.Main(ctx, Spec, env, []string{"bogus"}, io.Discard); err == nil || !strings.Contains(err.Error(), "migrate, serve") {
		t.Errorf("unknown subcommand error = %v, want one listing migrate and serve", err)
	}
}
