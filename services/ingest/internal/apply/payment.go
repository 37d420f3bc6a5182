package apply

import (
	"context"
	"fmt"

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
	o, c, err := w.store.OrderWithCustomerByMerchantID(ctx, p.OrderID)
	if err != nil {
		return nil, fmt.Errorf("order of payment %s, not recorded yet: %w", p.ID, err)
	}
	if p.AmountMinor != o.AmountMinor || p.Currency != o.Currency {
		return nil, errRejected{reason: fmt.Sprintf("payment %s does not match order %s: amount or currency differs", p.ID, o.MerchantOrderID)}
	}
	return func(_ *store.Tx, r *records) error {
		return recordPayment(ctx, r, p, o, c)
	}, nil
}

// recordPayment moves the payment's state forward, links the order the
// first time and, for a paid payment, adds the invoice event.
func recordPayment(ctx context.Context, r *records, p psp.Payment, o store.Order, c store.Customer) error {
	r.payments = append(r.payments, store.Payment{
		ID: p.ID, OrderID: o.ID, Status: p.Status, StatusRank: paymentRank[p.Status],
		AmountMinor: p.AmountMinor, Currency: p.Currency,
	})
	if o.PSPPaymentID == nil {
		r.links = append(r.links, store.OrderLink{OrderID: o.ID, PSPPaymentID: p.ID})
	}
	if p.Status != StatusPaid {
		return nil
	}
	msg, err := invoiceEvent(p, o, c)
	if err != nil {
		return err
	}
	r.event(ctx, msg)
	return nil
}
