package pgtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// planNode is one node of EXPLAIN (ANALYZE, FORMAT JSON).
type planNode struct {
	NodeType       string     `json:"Node Type"`
	IndexName      string     `json:"Index Name"`
	RelationName   string     `json:"Relation Name"`
	ActualRows     float64    `json:"Actual Rows"`
	ActualLoops    float64    `json:"Actual Loops"`
	RemovedFilter  float64    `json:"Rows Removed by Filter"`
	RemovedRecheck float64    `json:"Rows Removed by Index Recheck"`
	HeapFetches    float64    `json:"Heap Fetches"`
	Plans          []planNode `json:"Plans"`
}

func (n planNode) isScan() bool { return strings.HasSuffix(n.NodeType, "Scan") }

// scanned is the rows a scan node read over all its loops: those it
// returned and those it dropped.
func (n planNode) scanned() float64 {
	return (n.ActualRows + n.RemovedFilter + n.RemovedRecheck) * max(n.ActualLoops, 1)
}

// rowsRead sums, over the plan's scans, the rows they returned and those
// they read and dropped, and names each scan.
func (n planNode) rowsRead() (rows float64, scans []string) {
	if n.isScan() {
		rows += n.scanned()
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
	return explain(tb, pool, sql, args...).rowsRead()
}

// RowsReadFrom runs sql with args under EXPLAIN ANALYZE (so a statement
// that writes does write) and returns the rows its scans of relation read,
// those they returned and those they dropped: how a test checks that a
// query reads a table only for the rows that need it.
func RowsReadFrom(tb testing.TB, pool *pgxpool.Pool, relation, sql string, args ...any) float64 {
	tb.Helper()
	return explain(tb, pool, sql, args...).rowsReadFrom(relation)
}

func (n planNode) rowsReadFrom(relation string) float64 {
	var rows float64
	if n.isScan() && n.RelationName == relation {
		rows += n.scanned()
	}
	for _, c := range n.Plans {
		rows += c.rowsReadFrom(relation)
	}
	return rows
}

// HeapFetches runs sql with args under EXPLAIN ANALYZE and returns the
// rows its index-only scans had to fetch from the table (a page not yet
// all-visible), with its scans by node type and index: a query whose only
// scan is an index-only one with no fetch was answered by the index alone.
func HeapFetches(tb testing.TB, pool *pgxpool.Pool, sql string, args ...any) (float64, []string) {
	tb.Helper()
	plan := explain(tb, pool, sql, args...)
	_, scans := plan.rowsRead()
	return plan.heapFetches(), scans
}

func (n planNode) heapFetches() float64 {
	f := n.HeapFetches
	for _, c := range n.Plans {
		f += c.heapFetches()
	}
	return f
}

// explain runs sql with args under EXPLAIN (ANALYZE, FORMAT JSON) and
// returns its plan's root.
func explain(tb testing.TB, pool *pgxpool.Pool, sql string, args ...any) planNode {
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
	return plans[0].Plan
}

// GenericPlans is NewPool, but its statements are planned without their
// values: the plan a prepared statement keeps after five executions (pgx
// prepares every statement) once PostgreSQL finds it no worse than planning
// each call. Such a plan is made from the table's statistics alone, so a
// test that analyzes a table in one state, then fills it, sees the plan a
// service would keep.
func GenericPlans(tb testing.TB, schemas ...string) *pgxpool.Pool {
	tb.Helper()
	return newPool(tb, map[string]string{"plan_cache_mode": "force_generic_plan"}, schemas)
}

// Exec runs each statement on pool in turn, failing the test at the first
// error: a test's seed.
func Exec(tb testing.TB, pool *pgxpool.Pool, statements ...string) {
	tb.Helper()
	for _, sql := range statements {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	}
}

// ClaimReadsItsBatch runs claim, a statement that leases up to batch due
// rows and takes what every service's claim takes (a lease token, the lease
// in seconds, the batch size), under EXPLAIN ANALYZE, and fails the test
// when its scans read more than four rows a row of the batch: a claim reads
// its batch, not the backlog behind it.
func ClaimReadsItsBatch(tb testing.TB, pool *pgxpool.Pool, claim string, batch int) {
	tb.Helper()
	token := uuid.New()
	if rows, scans := RowsRead(tb, pool, claim, &token, 30.0, int32(batch)); rows > float64(4*batch) {
		tb.Errorf("a claim of %d read %.0f rows (%v); want its batch read, not the backlog", batch, rows, scans)
	}
}
