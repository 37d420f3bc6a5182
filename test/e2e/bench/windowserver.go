package bench

import (
	"context"
	"fmt"
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
}

// serverCounters are the running totals a window's figures are differences of.
type serverCounters struct {
	wal, fpi   int64
	checkpoint bool
}

func readServer(ctx context.Context, db *pgxpool.Pool) (serverCounters, error) {
	var c serverCounters
	err := db.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, (SELECT wal_fpi FROM pg_stat_wal),
       EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'checkpointer' AND wait_event = 'CheckpointWriteDelay')`).
		Scan(&c.wal, &c.fpi, &c.checkpoint)
	if err != nil {
		return c, fmt.Errorf("read the server's WAL and checkpointer: %w", err)
	}
	return c, nil
}

// windowServer is what the server did between two readings.
func windowServer(before, after serverCounters) WindowServer {
	return WindowServer{WALBytes: after.wal - before.wal, FullPages: after.fpi - before.fpi, Checkpoint: before.checkpoint || after.checkpoint}
}

// describeWindows says, window by window, the full-page images and whether
// a checkpoint was being written ("*").
func describeWindows(ws []WindowServer) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprint(w.FullPages)
		if w.Checkpoint {
			parts[i] += "*"
		}
	}
	return strings.Join(parts, ", ")
}
