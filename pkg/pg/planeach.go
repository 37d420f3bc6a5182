package pg

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PlanEachTime is the pgx mode, given as a statement's first argument, in
// which PostgreSQL plans the statement at each execution for the values it
// is given: pgx keeps the statement's description and sends it unnamed, in
// one round trip as a prepared statement would take.
//
// A prepared statement is planned for its values five times; then, if a
// plan made without them costs no more, PostgreSQL keeps that one until
// the tables it reads are analyzed again. A statement joining a batch with
// a table that a new install, or a test, has just created settles on a
// plan made while the table held a few rows: a sequential scan of it, with
// a hash of it, or once for every row of the batch. It keeps scanning the
// whole table as the table grows, until autovacuum analyzes it (a minute
// or more later; never where autovacuum is off). Planned each time, the
// statement probes the index as soon as the table outgrows a few pages.
const PlanEachTime = pgx.QueryExecModeCacheDescribe

// DB is what sqlc's generated code runs statements on: a pool, a
// connection or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// PlanEach returns db with the sqlc queries named (as on their "-- name:"
// line) run in PlanEachTime; every other statement runs as db runs it.
func PlanEach(db DB, queries ...string) DB {
	names := make(map[string]bool, len(queries))
	for _, q := range queries {
		names[q] = true
	}
	return planEach{DB: db, names: names}
}

type planEach struct {
	DB
	names map[string]bool
}

func (p planEach) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return p.DB.Exec(ctx, sql, p.args(sql, args)...)
}

func (p planEach) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return p.DB.Query(ctx, sql, p.args(sql, args)...)
}

func (p planEach) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return p.DB.QueryRow(ctx, sql, p.args(sql, args)...)
}

// args puts PlanEachTime before the arguments of a named query.
func (p planEach) args(sql string, args []any) []any {
	if !p.names[queryName(sql)] {
		return args
	}
	return append([]any{PlanEachTime}, args...)
}

// queryName is the name sqlc writes on a query's first line
// ("-- name: ReceiptInsertMany :many"); "" for any other statement.
func queryName(sql string) string {
	line, _, _ := strings.Cut(sql, "\n")
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "--" || f[1] != "name:" {
		return ""
	}
	return f[2]
}
