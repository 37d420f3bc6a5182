package app

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// TestReadOnlyRefusesWrites checks that the connections the reconciler opens
// to ingest and invoicer cannot write, and plan each statement for its own
// arguments, for both DSN forms.
func TestReadOnlyRefusesWrites(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	keywords := "host=" + cfg.Host + " port=" + strconv.Itoa(int(cfg.Port)) + " user=" + cfg.User +
		" dbname=" + cfg.Database + " sslmode=disable"
	for name, dsn := range map[string]string{"url": dsn, "keywords": keywords} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, err := pg.Open(ctx, dsn, readers...)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			_, err = pool.Exec(ctx, "CREATE TABLE written (id int)")
			if err == nil || !strings.Contains(err.Error(), "read-only") {
				t.Fatalf("write on a read-only connection = %v, want a read-only error", err)
			}
			var plans string
			if err := pool.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&plans); err != nil || plans != "force_custom_plan" {
				t.Fatalf("plan_cache_mode = %q, %v; want force_custom_plan, each page planned for its own range", plans, err)
			}
		})
	}
}
