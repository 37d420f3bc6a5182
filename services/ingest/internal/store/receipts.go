package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/deflated"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// NewReceipt is a verified webhook (or a polled status) to record.
type NewReceipt struct {
	Source      string // the configured sender, shown to operators
	Scope       string // sources sharing a scope share dedupe keys
	Kind        string // how the apply worker applies it
	DedupeKey   string // unique per scope: the event, never the delivery
	EventID     string
	EventType   string
	Body        []byte
	Traceparent string // the trace the worker continues
	deflated    bool   // Body is deflated (stored)
}

// stored is r as its row holds it: the body deflated when that is shorter.
func (r NewReceipt) stored() NewReceipt {
	if !r.deflated {
		r.Body, r.deflated = deflated.Pack(r.Body)
	}
	return r
}

// key is what r is unique by: its scope and dedupe key.
func (r NewReceipt) key() [2]string { return [2]string{r.Scope, r.DedupeKey} }

// Receipt is a recorded webhook as the apply worker claims it; a receipt
// sent back by an operator has only its ID, Source, EventID and EventType.
type Receipt struct {
	ID          int64
	Source      string
	Scope       string
	Kind        string
	EventID     string
	EventType   string
	Attempts    int
	Body        []byte
	ReceivedAt  time.Time
	Traceparent string
}

// ParkedReceipt is a parked receipt as shown to an operator: never its
// body, which may hold personal data.
type ParkedReceipt struct {
	ID         int64
	Source     string
	EventID    string
	EventType  string
	Attempts   int
	LastError  string
	ReceivedAt time.Time
}

// Backlog is the pending receipts' count and when the oldest of them
// arrived (the zero time when none is pending).
type Backlog struct {
	Pending int64
	Oldest  time.Time
}

// InsertReceipt records r; it returns false, and changes nothing, when its
// scope already has a receipt with its dedupe key. Concurrent calls are
// inserted together (receiptGroup): it returns once r is committed.
func (s *Store) InsertReceipt(ctx context.Context, r NewReceipt) (inserted bool, err error) {
	return s.receipts.insert(ctx, r)
}

// InsertReceipt is Store.InsertReceipt inside tx: a receipt the apply
// worker derives (a refund a PSP lists on its payment) commits with the
// state it was derived from.
func (t *Tx) InsertReceipt(ctx context.Context, r NewReceipt) (inserted bool, err error) {
	return insertReceipt(ctx, t.q, r.stored())
}

// insertReceipt inserts r, already stored.
func insertReceipt(ctx context.Context, q *dbsqlc.Queries, r NewReceipt) (bool, error) {
	n, err := q.ReceiptInsert(ctx, dbsqlc.ReceiptInsertParams{
		Source: r.Source, Scope: r.Scope, Kind: r.Kind, DedupeKey: r.DedupeKey,
		EventID: r.EventID, EventType: r.EventType, Body: r.Body, BodyDeflated: r.deflated, Traceparent: r.Traceparent,
	})
	if err != nil {
		return false, pg.Interpret(err, "insert receipt %s", r.EventID)
	}
	return n > 0, nil
}

// ClaimReceipts claims up to max pending receipts that are due and not
// leased by a live worker, under token for lease.
func (s *Store) ClaimReceipts(ctx context.Context, token uuid.UUID, lease time.Duration, max int) ([]Receipt, error) {
	rows, err := s.q.ReceiptClaimDue(ctx, &token, lease.Seconds(), int32(max))
	if err != nil {
		return nil, pg.Interpret(err, "claim receipts")
	}
	out := make([]Receipt, len(rows))
	for i, r := range rows {
		body, err := deflated.Unpack(r.Body, r.BodyDeflated)
		if err != nil {
			return nil, fmt.Errorf("claim receipts: body of receipt %d: %w", r.ID, err)
		}
		out[i] = Receipt{ID: r.ID, Source: r.Source, Scope: r.Scope, Kind: r.Kind, EventID: r.EventID, EventType: r.EventType,
			Attempts: int(r.Attempts), Body: body, ReceivedAt: r.ReceivedAt, Traceparent: r.Traceparent}
	}
	return out, nil
}

// FinishReceipt ends receipt id, claimed under token, as status ("done" or
// "rejected") with reason; a receipt another worker took over is left as it
// is, without an error.
func (s *Store) FinishReceipt(ctx context.Context, id int64, token uuid.UUID, status string, reason *string) error {
	_, err := s.q.ReceiptFinish(ctx, dbsqlc.ReceiptFinishParams{ID: id, LeaseToken: &token, Status: status, LastError: reason})
	return pg.Interpret(err, "finish receipt %d", id)
}

// RetryReceiptLater records a failed attempt at receipt id, claimed under
// token: it is due again at next, or parked when park is set. A receipt
// another worker took over is left as it is, without an error.
func (s *Store) RetryReceiptLater(ctx context.Context, id int64, token uuid.UUID, cause string, next time.Time, park bool) error {
	_, err := s.q.ReceiptRetryLater(ctx, dbsqlc.ReceiptRetryLaterParams{
		ID: id, LeaseToken: &token, LastError: &cause, Park: park, NextAttemptAt: next,
	})
	return pg.Interpret(err, "retry receipt %d later", id)
}

// RetryReceipt sends parked or rejected receipt id back to the worker with
// its attempts reset, and returns its ID, Source, EventID and EventType. A
// receipt that is not parked or rejected is an error of kind NotFound.
func (s *Store) RetryReceipt(ctx context.Context, id int64) (Receipt, error) {
	row, err := s.q.ReceiptRetry(ctx, id)
	if err != nil {
		return Receipt{}, pg.Interpret(err, "retry receipt %d", id)
	}
	return Receipt{ID: row.ID, Source: row.Source, EventID: row.EventID, EventType: row.EventType}, nil
}

// ParkedReceipts returns up to max parked receipts with ids above after,
// oldest first.
func (s *Store) ParkedReceipts(ctx context.Context, after int64, max int) ([]ParkedReceipt, error) {
	rows, err := s.q.ReceiptListParked(ctx, after, int32(max))
	if err != nil {
		return nil, pg.Interpret(err, "list parked receipts")
	}
	out := make([]ParkedReceipt, len(rows))
	for i, r := range rows {
		out[i] = ParkedReceipt{ID: r.ID, Source: r.Source, EventID: r.EventID, EventType: r.EventType,
			Attempts: int(r.Attempts), ReceivedAt: r.ReceivedAt}
		if r.LastError != nil {
			out[i].LastError = *r.LastError
		}
	}
	return out, nil
}

// ReceiptCounts returns the number of receipts per status present.
func (s *Store) ReceiptCounts(ctx context.Context) (map[string]int64, error) {
	rows, err := s.q.ReceiptCountsByStatus(ctx)
	if err != nil {
		return nil, pg.Interpret(err, "count receipts")
	}
	counts := make(map[string]int64, len(rows))
	for _, r := range rows {
		counts[r.Status] = r.Receipts
	}
	return counts, nil
}

// ReceiptBacklog returns the pending receipts' backlog.
func (s *Store) ReceiptBacklog(ctx context.Context) (Backlog, error) {
	row, err := s.q.ReceiptBacklog(ctx)
	if err != nil {
		return Backlog{}, pg.Interpret(err, "receipt backlog")
	}
	return Backlog{Pending: row.Pending, Oldest: fromUnix(row.OldestUnix)}, nil
}

// fromUnix is the time unix seconds after the epoch, the zero time for 0.
func fromUnix(unix float64) time.Time {
	if unix <= 0 {
		return time.Time{}
	}
	sec, frac := math.Modf(unix)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// PruneReceipts deletes up to max finished receipts received before cutoff
// and returns how many it deleted. Its statement walks the primary key from
// the oldest receipt, under pg.WalkKeys: once deleted receipts' space is
// reused the table's pages hold receipts in no order of their ids, and
// PostgreSQL may rather read and sort every retained receipt at each batch
// (it does where bitmap scans are off).
func (s *Store) PruneReceipts(ctx context.Context, cutoff time.Time, max int) (n int64, err error) {
	err = pg.InKeyWalk(ctx, s.pool, func(tx pgx.Tx) (err error) {
		n, err = s.q.WithTx(tx).ReceiptPrune(ctx, cutoff, int32(max))
		return err
	})
	return n, pg.Interpret(err, "prune receipts")
}
