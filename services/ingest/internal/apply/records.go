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
	links    []store.OrderLink
	events   []outbox.Message
	// paidFirst names, by order, the first PAID payment earlier in the
	// batch, which its check cannot read from the table yet.
	paidFirst map[uuid.UUID]string
}

// paid notes payment as order's first PAID payment in the batch.
func (r *records) paid(order uuid.UUID, payment string) {
	if r.paidFirst == nil {
		r.paidFirst = make(map[uuid.UUID]string)
	}
	r.paidFirst[order] = payment
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
	if err := tx.LinkOrders(ctx, r.links); err != nil {
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
