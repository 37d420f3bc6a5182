package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// applyPayment re-fetches payment id, checks it against its order and, in
// one transaction, records its state and, when it is paid, the invoice event.
func (w *Worker) applyPayment(ctx context.Context, id string, receipt int64, token uuid.UUID) error {
	p, err := w.psp.Payment(ctx, id)
	if err != nil {
		return err
	}
	w.log.Debug("payment fetched", zap.String("id", p.ID), zap.String("status", p.Status),
		zap.String("status_code", p.StatusCode), zap.Time("psp_created", p.Created))
	order, err := w.queries.OrderGetByMerchantID(ctx, p.OrderID)
	if err != nil {
		return fmt.Errorf("order of payment %s: %w", p.ID, storeErr(err))
	}
	if p.AmountMinor != order.AmountMinor || p.Currency != order.Currency {
		return errRejected{reason: fmt.Sprintf("payment %s does not match order %s: amount or currency differs", p.ID, order.MerchantOrderID)}
	}
	customer, err := w.queries.CustomerGet(ctx, order.CustomerID)
	if err != nil {
		return fmt.Errorf("customer of order %s: %w", order.MerchantOrderID, err)
	}
	return w.commit(ctx, receipt, token, func(q *store.Queries, tx pgx.Tx) error {
		return recordPayment(ctx, q, tx, p, order, customer)
	})
}

func recordPayment(ctx context.Context, q *store.Queries, tx pgx.Tx, p psp.Payment, o store.IngestOrder, c store.IngestCustomer) error {
	err := q.PaymentApply(ctx, store.PaymentApplyParams{
		ID: p.ID, OrderID: o.ID, Status: p.Status, StatusRank: paymentRank[p.Status],
		AmountMinor: p.AmountMinor, Currency: p.Currency,
	})
	if err != nil {
		return fmt.Errorf("apply payment %s: %w", p.ID, err)
	}
	if err := q.OrderSetPSPPayment(ctx, &p.ID, o.ID); err != nil {
		return fmt.Errorf("link order %s: %w", o.MerchantOrderID, err)
	}
	if p.Status != StatusPaid {
		return nil
	}
	msg, err := invoiceEvent(p, o, c)
	if err != nil {
		return err
	}
	return insertEvent(ctx, tx, msg)
}

// storeErr turns a missing row into a NotFound the worker retries.
func storeErr(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return errkind.New(errkind.NotFound, "not recorded yet")
	}
	return err
}
