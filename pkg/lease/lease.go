// Package lease is a PostgreSQL leader lease with a fencing token. Each
// service keeps its leases in its own schema's leases table:
//
//	CREATE TABLE <schema>.leases (
//	    name       text PRIMARY KEY,
//	    holder     text NOT NULL,
//	    token      bigint NOT NULL,
//	    expires_at timestamptz NOT NULL
//	);
//
// The token grows by one every time the lease changes hands, so work done
// under an old token can be refused with Fence inside the writing transaction.
//
// Leases can also form a Layout (several leases splitting one job, only one
// layout of them live at a time) and a Roster counts the live processes
// that compete for them, so each can take its fair share.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
)

// ErrDeposed means the caller no longer holds the lease under its token.
var ErrDeposed = errors.New("lease: deposed, another holder has taken over")

// Lease is one named lease held by one holder.
type Lease struct {
	pool   *pgxpool.Pool
	table  string
	name   string
	holder string
	ttl    time.Duration
	layout *Layout // nil for a lease on its own
}

// Name is the lease's name in its table.
func (l *Lease) Name() string { return l.name }

// querier runs a statement returning one row: a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// New returns a lease called name in schema's leases table for holder (a
// unique id of this process) lasting ttl after each acquisition or renewal.
func New(pool *pgxpool.Pool, schema, name, holder string, ttl time.Duration) *Lease {
	return &Lease{pool: pool, table: pgx.Identifier{schema, "leases"}.Sanitize(), name: name, holder: holder, ttl: ttl}
}

// Acquire takes the lease if it is free or expired, or renews it if this
// holder has it. ok is false when someone else holds it. The token is
// unchanged by a renewal and grows by one on a change of holder. Errors
// carry the kind pg.Interpret gives them (Unavailable for a serialization
// failure, Internal for the rest). A lease of a Layout is acquired or
// renewed only while no lease of another layout of its job is live.
func (l *Lease) Acquire(ctx context.Context) (token int64, ok bool, err error) {
	if l.layout != nil {
		return l.acquireInLayout(ctx)
	}
	token, ok, err = l.acquire(ctx, l.pool)
	return token, ok, pg.Interpret(err, "acquire lease %s", l.name)
}

// acquire runs the acquisition on db; its error is the driver's, for the
// caller to interpret once.
func (l *Lease) acquire(ctx context.Context, db querier) (token int64, ok bool, err error) {
	q := `INSERT INTO ` + l.table + ` AS l (name, holder, token, expires_at)
VALUES ($1, $2, 1, now() + $3::interval)
ON CONFLICT (name) DO UPDATE
SET holder = excluded.holder,
    token = CASE WHEN l.holder = excluded.holder AND l.expires_at > now() THEN l.token ELSE l.token + 1 END,
    expires_at = excluded.expires_at
WHERE l.holder = excluded.holder OR l.expires_at <= now()
RETURNING token`
	err = db.QueryRow(ctx, q, l.name, l.holder, l.ttl.String()).Scan(&token)
	if errkind.Is(pg.Interpret(err, "acquire lease"), errkind.NotFound) { // no row: another holder has it
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return token, true, nil
}

// Release gives the lease up early so a standby need not wait for the TTL.
func (l *Lease) Release(ctx context.Context, token int64) error {
	q := `UPDATE ` + l.table + ` SET expires_at = now() WHERE name = $1 AND holder = $2 AND token = $3`
	if _, err := l.pool.Exec(ctx, q, l.name, l.holder, token); err != nil {
		return fmt.Errorf("release lease %s: %w", l.name, err)
	}
	return nil
}

// Fence checks, inside tx, that token still holds the lease and has not
// expired, and locks the lease row until tx ends so no one can take over
// while tx writes. It returns ErrDeposed otherwise, and other errors with
// the kind pg.Interpret gives them.
func (l *Lease) Fence(ctx context.Context, tx pgx.Tx, token int64) error {
	fence, args := l.FenceClause(token, 1)
	var one int
	err := pg.Interpret(tx.QueryRow(ctx, `WITH `+fence+` SELECT 1 FROM fence`, args...).Scan(&one), "fence lease %s", l.name)
	if errkind.Is(err, errkind.NotFound) {
		return ErrDeposed
	}
	return err
}

// FenceClause is Fence as a WITH item named fence, for a statement of the
// caller's own whose parameters for it are numbered from first (args, in
// order): fence holds one row while token holds the lease and has not
// expired, and locks the lease row until the statement's transaction ends,
// the statement's own when it runs alone. A statement that writes only
// where fence has its row is fenced without BEGIN and COMMIT.
func (l *Lease) FenceClause(token int64, first int) (fence string, args []any) {
	return fmt.Sprintf(`fence AS (SELECT 1 FROM %s WHERE name = $%d AND token = $%d AND holder = $%d AND expires_at > now() FOR SHARE)`,
		l.table, first, first+1, first+2), []any{l.name, token, l.holder}
}

// HolderID names a process in a lease table: the hostname (or fallback)
// plus a random suffix, unique even when two processes share a host or a
// pod name is reused.
func HolderID(fallback string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = fallback
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// Holding is one lease as the table holds it: who holds it, under which
// token, until when, and whether that time is still ahead (by the
// database's clock).
type Holding struct {
	Name      string    `json:"name"`
	Holder    string    `json:"holder"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	Live      bool      `json:"live"`
}

// List returns every lease of schema's leases table (a handful of rows:
// one per leader), by name.
func List(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, schema string) ([]Holding, error) {
	rows, err := q.Query(ctx, `SELECT name, holder, token, expires_at, expires_at > now() FROM `+
		pgx.Identifier{schema, "leases"}.Sanitize()+` ORDER BY name`)
	if err != nil {
		return nil, pg.Interpret(err, "list leases of %s", schema)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Holding])
	if err != nil {
		return nil, pg.Interpret(err, "list leases of %s", schema)
	}
	return out, nil
}
