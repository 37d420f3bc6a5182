package apply

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// records gathers what a batch of receipts writes, so each kind of
// statement goes to PostgreSQL once for the whole batch, pipelined in one
// round trip, instead of once per receipt.
type records struct {
	payments []store.Payment
	events   []outbox.Message
	// paidIDs are the batch's checked payments recorded PAID, and
	// firstPaid, by order, its earliest PAID payment: recorded, or else the
	// first checked in the batch, which the table does not show yet.
	paidIDs   map[string]bool
	firstPaid map[uuid.UUID]string
}

// lockPaid locks the orders of batch's PAID payments, before any write of
// the batch runs, and reads their PAID payments for checkFirstPaid: one
// lock statement (the orders in id order) and one read for the whole
// batch.
func (r *records) lockPaid(ctx context.Context, tx *store.Tx, batch []*staged) error {
	var checks []store.PaidCheck
	for _, s := range batch {
		if s.paid != nil {
			checks = append(checks, *s.paid)
		}
	}
	r.paidIDs, r.firstPaid = map[string]bool{}, map[uuid.UUID]string{}
	if len(checks) == 0 {
		return nil
	}
	paid, err := tx.LockOrdersPaid(ctx, checks)
	if err != nil {
		return err
	}
	for _, p := range paid {
		r.paidIDs[p.ID] = true
		if _, ok := r.firstPaid[p.OrderID]; !ok {
			r.firstPaid[p.OrderID] = p.ID
		}
	}
	return nil
}

// event adds msg, carrying ctx's trace so the relay and the invoicer
// continue it.
func (r *records) event(ctx context.Context, msg outbox.Message) {
	msg.Traceparent = tracing.Traceparent(ctx)
	r.events = append(r.events, msg)
}

// write sends what r gathered in tx; events counts the new outbox rows (an
// event already there is not inserted again).
func (r *records) write(ctx context.Context, tx *store.Tx) (events int64, err error) {
	if err := tx.ApplyPayments(ctx, r.payments); err != nil {
		return 0, err
	}
	return tx.InsertEvents(ctx, r.events)
}

// errLostClaim means another worker took the receipt over: roll back.
var errLostClaim = errors.New("receipt claim lost to another worker")

// finishDone marks batch's receipts done in tx, fenced by the claim token;
// a receipt another worker took over fails it all with errLostClaim.
func finishDone(ctx context.Context, tx *store.Tx, batch []*staged, token uuid.UUID) error {
	ids := make([]int64, len(batch))
	for i, s := range batch {
		ids[i] = s.r.ID
	}
	err := tx.FinishDone(ctx, ids, token)
	if errkind.Is(err, errkind.Conflict) {
		return errLostClaim
	}
	return err
}
