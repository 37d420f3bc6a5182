package pgtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// planNode is one node of EXPLAIN (ANALYZE, FORMAT JSON).
type planNode struct {
	NodeType       string     `json:"Node Type"`
	IndexName      string     `json:"Index Name"`
	ActualRows     float64    `json:"Actual Rows"`
	ActualLoops    float64    `json:"Actual Loops"`
	RemovedFilter  float64    `json:"Rows Removed by Filter"`
	RemovedRecheck float64    `json:"Rows Removed by Index Recheck"`
	Plans          []planNode `json:"Plans"`
}

// rowsRead sums, over the plan's scans, the rows they returned and those
// they read and dropped, and names each scan.
func (n planNode) rowsRead() (rows float64, scans []string) {
	if strings.HasSuffix(n.NodeType, "Scan") {
		rows += (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
		scans = append(scans, n.NodeType+" "+n.IndexName)
	}
	for _, c := range n.Plans {
		r, s := c.rowsRead()
		rows += r
		scans = append(scans, s...)
	}
	return rows, scans
}

// RowsRead runs sql with args under EXPLAIN ANALYZE (so a statement that
// writes does write) and returns the rows its scans read, those they
// returned and those they dropped, with the scans by node type and index:
// how a test checks that a query reads what it returns, not the history.
func RowsRead(tb testing.TB, pool *pgxpool.Pool, sql string, args ...any) (float64, []string) {
	tb.Helper()
	var out []byte
	if err := pool.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&out); err != nil {
		tb.Fatalf("explain: %v", err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(out, &plans); err != nil {
		tb.Fatal(err)
	}
	return plans[0].Plan.rowsRead()
}
