package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// The backlog gauges' query reads the services' outboxes through their
// partial indexes on pending and parked rows, never scanning the published
// history: with scans off the plan uses both indexes and nothing else.
func TestStatsReadOnlyTheUnpublishedRowsIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, schema := range []string{"ingest", "invoicer"} {
		dsn := pgtest.NewDatabase(t)
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			t.Fatal(err)
		}
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		var plan strings.Builder
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, "EXPLAIN "+outbox.StatsSQL(outbox.Table{Schema: schema, Name: "outbox"}))
			if err != nil {
				return err
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			plan.WriteString(strings.Join(lines, "\n"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		p := plan.String()
		if !strings.Contains(p, "outbox_due") || !strings.Contains(p, "outbox_parked") || strings.Contains(p, "Seq Scan") || strings.Contains(p, "outbox_pkey") {
			t.Errorf("%s.outbox stats plan does not read only outbox_due and outbox_parked:\n%s", schema, p)
		}
	}
}
