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
// to ingest and invoicer cannot write, for both DSN forms.
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
			pool, err := pg.Open(ctx, dsn, readOnly)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			_, err = pool.Exec(ctx, "CREATE TABLE written (id int)")
			if err == nil || !strings.Contains(err.Error(), "read-only") {
				t.Fatalf("write on a read-only connection = %v, want a read-only error", err)
			}
			var one int
			if err := pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				t.Fatalf("read: %v", err)
			}
		})
	}
}
