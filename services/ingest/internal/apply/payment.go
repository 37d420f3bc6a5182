package apply

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// preparePayment re-fetches payment id and checks it against its order; its
// write records the payment's state and, when it is paid, the invoice event.
func (w *Worker) preparePayment(ctx context.Context, id string) (write, error) {
	p, err := w.psp.Payment(ctx, id)
	if err != nil {
		return nil, err
	}
	w.log.Debug("payment fetched", zap.String("id", p.ID), zap.String("status", p.Status),
		zap.String("status_code", p.StatusCode), zap.Time("psp_created", p.Created))
	order, err := w.queries.OrderGetByMerchantID(ctx, p.OrderID)
	if err != nil {
		return nil, fmt.Errorf("order of payment %s, not recorded yet: %w", p.ID, err)
	}
	if p.AmountMinor != order.AmountMinor || p.Currency != order.Currency {
		return nil, errRejected{reason: fmt.Sprintf("payment %s does not match order %s: amount or currency differs", p.ID, order.MerchantOrderID)}
	}
	customer, err := w.queries.CustomerGet(ctx, order.CustomerID)
	if err != nil {
		return nil, fmt.Errorf("customer of order %s: %w", order.MerchantOrderID, err)
	}
	return func(q *store.Queries, tx pgx.Tx) (bool, error) {
		return recordPayment(ctx, q, tx, p, order, customer)
	}, nil
}

// recordPayment moves the payment's state forward, links the order the
// first time and, for a paid payment, inserts the invoice event; evented
// reports a new event.
func recordPayment(ctx context.Context, q *store.Queries, tx pgx.Tx, p psp.Payment, o store.IngestOrder, c store.IngestCustomer) (evented bool, err error) {
	err = q.PaymentApply(ctx, store.PaymentApplyParams{
		ID: p.ID, OrderID: o.ID, Status: p.Status, StatusRank: paymentRank[p.Status],
		AmountMinor: p.AmountMinor, Currency: p.Currency,
	})
	if err != nil {
		return false, fmt.Errorf("apply payment %s: %w", p.ID, err)
	}
	if o.PspPaymentID == nil {
		if err := q.OrderSetPSPPayment(ctx, &p.ID, o.ID); err != nil {
			return false, fmt.Errorf("link order %s: %w", o.MerchantOrderID, err)
		}
	}
	if p.Status != StatusPaid {
		return false, nil
	}
	msg, err := invoiceEvent(p, o, c)
	if err != nil {
		return false, err
	}
	return insertEvent(ctx, tx, msg)
}
