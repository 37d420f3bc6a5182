// Package store is the invoicer's PostgreSQL store: fiscal documents, the
// provider calls made for them and operators' resolutions. Each method calls
// one generated query (package dbsqlc), interprets the driver's error once
// with pg.Interpret (no rows is errkind.NotFound, a unique violation
// Conflict, …) and returns the domain types declared here; the rest of the
// invoicer never sees sqlc rows or pgx errors.
//
// Store runs each method on the pool; Tx runs the same methods inside one
// transaction, which may also write the outbox (InsertOutbox), so a status
// change and its announcement commit together.
package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// Conditional writes that matched no row.
var (
	// ErrDuplicate, of kind errkind.Conflict: the billing event was already
	// recorded; a redelivery inserts nothing.
	ErrDuplicate = errkind.New(errkind.Conflict, "document already recorded")
	// ErrFenced, of kind errkind.Conflict: a result was not saved because
	// the claim's lease expired and another worker took the document, or
	// its status changed meanwhile.
	ErrFenced = errkind.New(errkind.Conflict, "lease or status changed meanwhile")
)

// queries holds the methods Store and Tx share.
type queries struct{ q *dbsqlc.Queries }

// Store is the invoicer's store over a pool. It is safe for concurrent use.
type Store struct {
	queries
	pool    *pgxpool.Pool
	handoff *Handoff // nil: documents are recorded unclaimed
}

// New returns the store over pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{queries: queries{dbsqlc.New(pool)}, pool: pool}
}

// Tx is the store inside one transaction; it is valid only during the
// function given to InTx.
type Tx struct {
	queries
	tx pgx.Tx
}

// InTx runs fn in a transaction, committed when fn returns nil and rolled
// back otherwise. fn's error is returned as it is; a failure to begin or
// commit is interpreted (a serialization failure is errkind.Unavailable).
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	var fnErr error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		fnErr = fn(&Tx{queries: queries{s.q.WithTx(tx)}, tx: tx})
		return fnErr
	})
	if err != nil && fnErr == nil {
		return pg.Interpret(err, "transaction")
	}
	return err
}

// InsertOutbox adds msgs to table in the transaction (see
// outbox.InsertMany); messages whose event key is already there are
// ignored. It returns how many rows were new.
func (t *Tx) InsertOutbox(ctx context.Context, table outbox.Table, msgs []outbox.Message) (int64, error) {
	return outbox.InsertMany(ctx, t.tx, table, msgs)
}
