package emit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	store "github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// calls holds one attempt's provider calls until the next write about the
// document records them in its own transaction: the look-ups go with the
// send marker, the send with the result. Every call is on record before the
// one after it could change anything, and no call costs a commit of its
// own. A call made by a worker that dies before the next write is not
// recorded; the send marker is, so its document is treated as unknown.
type calls struct {
	pending []store.AttemptInsertParams
}

// add holds one more call.
func (c *calls) add(a store.AttemptInsertParams) { c.pending = append(c.pending, a) }

// done forgets the calls a committed transaction recorded.
func (c *calls) done() { c.pending = nil }

// writeCalls inserts the calls jobs hold with q, a transaction's queries,
// in one COPY; the caller forgets them (done) once that transaction has
// committed.
func writeCalls(ctx context.Context, q *store.Queries, jobs []*job) error {
	var all []store.AttemptInsertParams
	for _, j := range jobs {
		all = append(all, j.calls.pending...)
	}
	if len(all) == 0 {
		return nil
	}
	if _, err := q.AttemptInsert(ctx, all); err != nil {
		return fmt.Errorf("record emission attempts: %w", err)
	}
	return nil
}

// writeAlone records j's held calls in a transaction of their own, for an
// attempt whose result was not saved.
func (e *Emitter) writeAlone(ctx context.Context, j *job) {
	if len(j.calls.pending) == 0 {
		return
	}
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error { return writeCalls(ctx, e.queries.WithTx(tx), []*job{j}) })
	if err != nil {
		e.log.Warn("record emission attempts", zap.Error(err))
	}
	j.calls.done()
}
