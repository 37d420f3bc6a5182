package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// ApplyPayments records payments' states, moving each only forward (a
// lower-ranked status changes nothing): in one statement when their ids
// are distinct, else one statement each, in order, in one round trip (the
// first statement's error is returned).
func (t *Tx) ApplyPayments(ctx context.Context, payments []Payment) (err error) {
	if len(payments) == 0 {
		return nil
	}
	if distinctIDs(payments) {
		return t.applyDistinctPayments(ctx, payments)
	}
	params := make([]dbsqlc.PaymentApplyParams, len(payments))
	for i, p := range payments {
		params[i] = dbsqlc.PaymentApplyParams{ID: p.ID, OrderID: p.OrderID, Status: p.Status, StatusRank: p.StatusRank,
			AmountMinor: p.AmountMinor, Currency: p.Currency}
	}
	t.q.PaymentApply(ctx, params).Exec(func(i int, e error) {
		if e != nil && err == nil {
			err = pg.Interpret(e, "apply payment %s", payments[i].ID)
		}
	})
	return err
}

// distinctIDs reports whether no two payments share an id.
func distinctIDs(payments []Payment) bool {
	seen := make(map[string]bool, len(payments))
	for _, p := range payments {
		if seen[p.ID] {
			return false
		}
		seen[p.ID] = true
	}
	return true
}

// applyDistinctPayments is ApplyPayments in one statement, for payments of
// distinct ids.
func (t *Tx) applyDistinctPayments(ctx context.Context, payments []Payment) error {
	var arg dbsqlc.PaymentApplyManyParams
	for _, p := range payments {
		arg.Ids, arg.OrderIds, arg.Statuses = append(arg.Ids, p.ID), append(arg.OrderIds, p.OrderID), append(arg.Statuses, p.Status)
		arg.StatusRanks, arg.AmountsMinor = append(arg.StatusRanks, p.StatusRank), append(arg.AmountsMinor, p.AmountMinor)
		arg.Currencies = append(arg.Currencies, p.Currency)
	}
	return pg.Interpret(t.q.PaymentApplyMany(ctx, arg), "apply %d payments", len(payments))
}

// InsertEvents adds msgs to the outbox in one statement and returns how
// many were new (an event already there is not inserted again).
func (t *Tx) InsertEvents(ctx context.Context, msgs []outbox.Message) (int64, error) {
	n, err := outbox.InsertMany(ctx, t.tx, Outbox, msgs)
	return n, pg.Interpret(err, "insert events")
}

// LockPayment locks payment id until the transaction ends, so two refunds
// of it are checked one after the other, and returns its amount. A
// payment not recorded is an error of kind NotFound.
func (t *Tx) LockPayment(ctx context.Context, id string) (amountMinor int64, err error) {
	amount, err := t.q.PaymentLock(ctx, id)
	return amount, pg.Interpret(err, "lock payment %s", id)
}

// RefundedExcept returns the amount refunded successfully on payment
// paymentID by refunds other than refundID.
func (t *Tx) RefundedExcept(ctx context.Context, paymentID, refundID string) (int64, error) {
	sum, err := t.q.RefundSumOthersSucceeded(ctx, paymentID, refundID)
	return sum, pg.Interpret(err, "refunded so far on %s", paymentID)
}

// ApplyRefund records r's state, moving it only forward. A refund whose
// payment is not recorded is an error of kind Invalid.
func (t *Tx) ApplyRefund(ctx context.Context, r Refund) error {
	err := t.q.RefundApply(ctx, dbsqlc.RefundApplyParams{
		ID: r.ID, PaymentID: r.PaymentID, Status: r.Status, StatusRank: r.StatusRank,
		AmountMinor: r.AmountMinor, Currency: r.Currency,
	})
	return pg.Interpret(err, "apply refund %s", r.ID)
}

// FinishDone marks receipts ids, claimed under token, done in one
// statement. A receipt no longer held under token (another worker took it
// over) is an error of kind Conflict; the transaction must then roll back.
func (t *Tx) FinishDone(ctx context.Context, ids []int64, token uuid.UUID) error {
	done, err := t.q.ReceiptFinishDone(ctx, ids, &token)
	if err != nil {
		return pg.Interpret(err, "finish %d receipts", len(ids))
	}
	if len(done) != len(ids) {
		return errkind.New(errkind.Conflict, "receipt claim lost to another worker: %d of %d receipts still held", len(done), len(ids))
	}
	return nil
}
