package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/tracing"
	store "github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// records gathers what a batch of receipts writes, so each kind of
// statement goes to PostgreSQL once for the whole batch, pipelined in one
// round trip, instead of once per receipt.
type records struct {
	payments []store.PaymentApplyParams
	links    []store.OrderSetPSPPaymentParams
	events   []outbox.Message
}

// event adds msg, carrying ctx's trace so the relay and the invoicer
// continue it.
func (r *records) event(ctx context.Context, msg outbox.Message) {
	msg.Traceparent = tracing.Traceparent(ctx)
	r.events = append(r.events, msg)
}

// write sends what r gathered in tx, q being tx's queries; events counts
// the new outbox rows (an event already there is not inserted again).
func (r *records) write(ctx context.Context, q *store.Queries, tx pgx.Tx) (events int64, err error) {
	first := func(what func(i int) string) func(int, error) {
		return func(i int, e error) {
			if e != nil && err == nil {
				err = fmt.Errorf("%s: %w", what(i), e)
			}
		}
	}
	if len(r.payments) > 0 {
		q.PaymentApply(ctx, r.payments).Exec(first(func(i int) string { return "apply payment " + r.payments[i].ID }))
	}
	if len(r.links) > 0 && err == nil {
		q.OrderSetPSPPayment(ctx, r.links).Exec(first(func(i int) string { return "link order " + r.links[i].ID.String() }))
	}
	if err != nil {
		return 0, err
	}
	return outbox.InsertMany(ctx, tx, Outbox, r.events)
}

// errLostClaim means another worker took the receipt over: roll back.
var errLostClaim = errors.New("receipt claim lost to another worker")

// finishDone marks batch's receipts done in q's transaction, fenced by the
// claim token; a receipt another worker took over fails it all.
func finishDone(ctx context.Context, q *store.Queries, batch []*staged, token uuid.UUID) (err error) {
	params := make([]store.ReceiptFinishDoneParams, len(batch))
	for i, s := range batch {
		params[i] = store.ReceiptFinishDoneParams{ID: s.r.ID, LeaseToken: &token}
	}
	q.ReceiptFinishDone(ctx, params).QueryRow(func(_ int, _ int64, e error) {
		switch {
		case err != nil:
		case errors.Is(e, pgx.ErrNoRows):
			err = errLostClaim
		case e != nil:
			err = fmt.Errorf("finish receipt: %w", e)
		}
	})
	return err
}
