package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// WindowServer is what PostgreSQL did during one window of the open loop,
// beside its p99 (the first window's figures include the warm-up before
// it): a window whose tail stands out shows whether a checkpoint had begun
// (its first changes to each page are logged whole).
type WindowServer struct {
	WALBytes  int64 `json:"wal_bytes"`
	FullPages int64 `json:"full_pages"` // full-page images among that WAL
	// Checkpoint says whether the checkpointer was writing a checkpoint
	// when the window began or ended (it waits between its writes).
	Checkpoint bool `json:"checkpoint"`
	// Autovacuum are the tables autovacuum was vacuuming or analyzing when
	// the window began or ended, or finished with during it.
	Autovacuum []string `json:"autovacuum,omitempty"`
}

// serverCounters are the running totals a window's figures are differences of.
type serverCounters struct {
	wal, fpi   int64
	checkpoint bool
	// autovacuums is each table's autovacuum and autoanalyze count;
	// autovacuuming, the tables an autovacuum worker is on.
	autovacuums   map[string]int64
	autovacuuming []string
}

func readServer(ctx context.Context, db *pgxpool.Pool) (serverCounters, error) {
	var c serverCounters
	err := db.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, (SELECT wal_fpi FROM pg_stat_wal),
       EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'checkpointer' AND wait_event = 'CheckpointWriteDelay'),
       (SELECT coalesce(jsonb_object_agg(schemaname || '.' || relname, autovacuum_count + autoanalyze_count), '{}') FROM pg_stat_user_tables),
       (SELECT coalesce(array_agg(DISTINCT substring(query FROM '[^ ]+\.[^ ]+')), '{}') FROM pg_stat_activity
        WHERE backend_type = 'autovacuum worker' AND query LIKE 'autovacuum: %')`).
		Scan(&c.wal, &c.fpi, &c.checkpoint, &c.autovacuums, &c.autovacuuming)
	if err != nil {
		return c, fmt.Errorf("read the server's WAL, checkpointer and autovacuum: %w", err)
	}
	return c, nil
}

// windowServer is what the server did between two readings.
func windowServer(before, after serverCounters) WindowServer {
	w := WindowServer{WALBytes: after.wal - before.wal, FullPages: after.fpi - before.fpi, Checkpoint: before.checkpoint || after.checkpoint}
	tables := append(slices.Clone(before.autovacuuming), after.autovacuuming...)
	for table, n := range after.autovacuums {
		if n > before.autovacuums[table] {
			tables = append(tables, table)
		}
	}
	slices.Sort(tables)
	w.Autovacuum = slices.Compact(tables)
	return w
}

// describeWindows says, window by window, the full-page images, whether
// a checkpoint was being written ("*") and the tables autovacuum was on.
func describeWindows(ws []WindowServer) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprint(w.FullPages)
		if w.Checkpoint {
			parts[i] += "*"
		}
		if len(w.Autovacuum) > 0 {
			parts[i] += " (autovacuum: " + strings.Join(w.Autovacuum, ", ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}
