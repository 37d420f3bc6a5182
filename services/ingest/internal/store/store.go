// Package store is ingest's PostgreSQL store: its methods run the
// sqlc-generated queries of package dbsqlc, turn the driver's errors into
// errkind kinds once (no rows is NotFound, a duplicate Conflict, a missing
// referenced row Invalid, a serialization failure or deadlock Unavailable)
// and return the domain types declared here.
package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/handoff"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// Outbox is where ingest's events go.
var Outbox = outbox.Table{Schema: "ingest", Name: "outbox"}

// Store reads and writes ingest's tables through a pool.
type Store struct {
	pool      *pgxpool.Pool
	q         *dbsqlc.Queries
	receipts  *receiptGroup
	pollAfter time.Duration // an order's first status poll is due this long after its creation
}

// receiptInserters and receiptBatch bound the grouped receipt inserts
// (receiptGroup): at most 2 at a time, of at most 100 receipts each.
const receiptInserters, receiptBatch = 2, 100

// newID mints the id of a customer or an order: a UUIDv7, whose first 48
// bits are the time in milliseconds, so each new row's key lands at the
// right edge of the primary key and of every index on it (the order's in
// payments_order) rather than on a random page. A random key dirtied a leaf
// page of each such index for each row, each page written whole to the WAL
// once after every checkpoint.
func newID() (uuid.UUID, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.UUID{}, errkind.Wrap(errkind.Unavailable, err, "mint id")
	}
	return id, nil
}

// New returns a store over pool.
func New(pool *pgxpool.Pool) *Store {
	q := dbsqlc.New(pool)
	return &Store{pool: pool, q: q, receipts: newReceiptGroup(q, receiptInserters, receiptBatch)}
}

// Handoff is where the receipts a webhook brings go, claimed, for this
// process's apply loop (package handoff).
type Handoff = handoff.Handoff[Receipt]

// NewHandoff returns a handoff of at most max receipts, each inserted
// under a lease of lease.
func NewHandoff(lease time.Duration, max int) *Handoff { return handoff.New[Receipt](lease, max) }

// UseHandoff makes the receipts inserted by InsertReceipt go to h,
// claimed, while it has room; call it before the store is used.
func (s *Store) UseHandoff(h *Handoff) { s.receipts.handoff = h }

// ReleaseHandoff ends the claims of the pending receipts inserted under a
// handoff's token, for a process that stops: the next claim takes them at
// once. It returns how many it released.
func (s *Store) ReleaseHandoff(ctx context.Context, token uuid.UUID) (int64, error) {
	n, err := s.q.ReceiptReleaseHandoff(ctx, &token)
	return n, pg.Interpret(err, "release the handoff's receipts")
}

// Tx is one transaction of the apply worker: what a batch of receipts
// writes, committed together.
type Tx struct {
	tx pgx.Tx
	q  *dbsqlc.Queries
}

// InTx runs fn in a transaction, committed when fn returns nil and rolled
// back otherwise. fn's error is returned as is; a failure to begin or
// commit is interpreted like any other driver error.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	var fnErr error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		fnErr = fn(&Tx{tx: tx, q: s.q.WithTx(tx)})
		return fnErr
	})
	if err != nil && fnErr == nil {
		return pg.Interpret(err, "transaction")
	}
	return err
}
