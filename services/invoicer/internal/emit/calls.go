package emit

import (
	"context"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// calls holds one attempt's provider calls until the next write about the
// document records them in its own transaction: the look-ups go with the
// send marker, the send with the result. Every call is on record before the
// one after it could change anything, and no call costs a commit of its
// own. A call made by a worker that dies before the next write is not
// recorded; the send marker is, so its document is treated as unknown.
type calls struct {
	pending []store.Attempt
}

// add holds one more call.
func (c *calls) add(a store.Attempt) { c.pending = append(c.pending, a) }

// done forgets the calls a committed transaction recorded.
func (c *calls) done() { c.pending = nil }

// writeCalls inserts the calls jobs hold in tx, in one COPY; the caller
// forgets them (done) once tx has committed.
func writeCalls(ctx context.Context, tx *store.Tx, jobs []*job) error {
	var all []store.Attempt
	for _, j := range jobs {
		all = append(all, j.calls.pending...)
	}
	if len(all) == 0 {
		return nil
	}
	return tx.InsertAttempts(ctx, all)
}

// writeAlone records j's held calls in a transaction of their own, for an
// attempt whose result was not saved.
func (e *Emitter) writeAlone(ctx context.Context, j *job) {
	if len(j.calls.pending) == 0 {
		return
	}
	err := e.store.InTx(ctx, func(tx *store.Tx) error { return writeCalls(ctx, tx, []*job{j}) })
	if err != nil {
		e.log.Warn("record emission attempts", zap.Error(err))
	}
	j.calls.done()
}
