package apply

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// prepareRefund re-fetches refund id and checks its payment is recorded as
// paid; its write records the refund's state and, when it succeeded, the
// credit-note event. A refund seen before its payment is retried later.
func (w *Worker) prepareRefund(ctx context.Context, adapter PSP, id string) (write, error) {
	r, err := adapter.Refund(ctx, id)
	if err != nil {
		return nil, err
	}
	w.log.Debug("refund fetched", zap.String("id", r.ID), zap.String("status", r.Status),
		zap.String("status_code", r.StatusCode), zap.Time("psp_created", r.Created))
	payment, err := w.store.Payment(ctx, r.PaymentID)
	if err != nil {
		return nil, fmt.Errorf("payment of refund %s, not recorded yet: %w", r.ID, err)
	}
	if payment.Status != StatusPaid {
		return nil, fmt.Errorf("refund %s waits: payment %s is %s, not PAID", r.ID, payment.ID, payment.Status)
	}
	if r.Currency != payment.Currency {
		return nil, errRejected{reason: fmt.Sprintf("refund %s currency differs from payment %s", r.ID, payment.ID),
			kase: refusedRefund(r, ReasonCurrencyMismatch, map[string]any{"payment_currency": payment.Currency})}
	}
	o, c, err := w.store.OrderWithCustomer(ctx, payment.OrderID)
	if err != nil {
		return nil, fmt.Errorf("order of payment %s: %w", payment.ID, err)
	}
	return func(tx *store.Tx, rec *records) error {
		return recordRefund(ctx, tx, rec, r, o, c)
	}, nil
}

// recordRefund moves the refund's state forward and, for a successful one,
// adds its credit-note event. A success is checked against what the
// payment's other successful refunds took, with the payment locked, so two
// refunds applied at once cannot together exceed it; the check and the
// refund's own row are written at once, so a later refund of the same
// batch sees them.
func recordRefund(ctx context.Context, tx *store.Tx, rec *records, r psp.Refund, o store.Order, c store.Customer) error {
	if r.Status == StatusSuccess {
		if err := checkRefundable(ctx, tx, r); err != nil {
			return err
		}
	}
	err := tx.ApplyRefund(ctx, store.Refund{
		ID: r.ID, PaymentID: r.PaymentID, Status: r.Status, StatusRank: refundRank[r.Status],
		AmountMinor: r.AmountMinor, Currency: r.Currency,
	})
	if err != nil {
		return err
	}
	if r.Status != StatusSuccess {
		return nil
	}
	msg, err := creditNoteEvent(r, o, c)
	if err != nil {
		return err
	}
	rec.event(ctx, msg)
	return nil
}

// checkRefundable locks r's payment and refuses r when it and the
// payment's other successful refunds would exceed it.
func checkRefundable(ctx context.Context, tx *store.Tx, r psp.Refund) error {
	paid, err := tx.LockPayment(ctx, r.PaymentID)
	if err != nil {
		return err
	}
	refunded, err := tx.RefundedExcept(ctx, r.PaymentID, r.ID)
	if err != nil {
		return err
	}
	if refunded+r.AmountMinor > paid {
		return errRejected{reason: fmt.Sprintf("refund %s would exceed payment %s", r.ID, r.PaymentID),
			kase: refusedRefund(r, ReasonOverRefund, map[string]any{"payment_amount_minor": paid, "refunded_minor": refunded})}
	}
	return nil
}
