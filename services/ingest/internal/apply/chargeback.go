package apply

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// prepareChargeback handles a payment the PSP reports charged back: money
// that left, so never ignored, whatever its order says. Its write moves the
// recorded payment to CHARGEBACK (recording it first if its order is known)
// and opens a chargeback case for a person, holding on to receipt r. The
// case opens once per payment: a chargeback seen again changes nothing.
func (w *Worker) prepareChargeback(ctx context.Context, p psp.Payment, r store.Receipt) (write, error) {
	stored, err := w.store.Payment(ctx, p.ID)
	known := err == nil
	if err != nil && !errkind.Is(err, errkind.NotFound) {
		return nil, fmt.Errorf("payment %s: %w", p.ID, err)
	}
	if known && stored.Status == StatusChargeback {
		return func(*store.Tx, *records) error { return nil }, nil
	}
	orderID := stored.OrderID
	if !known {
		o, _, err := w.orderOf(ctx, &p)
		if err != nil && !errkind.Is(err, errkind.NotFound) {
			return nil, fmt.Errorf("order of payment %s: %w", p.ID, err)
		}
		orderID = o.ID
	}
	if known && stored.Status == StatusPaid && w.cfg.ChargebackCreditNote[r.Scope] {
		return w.prepareChargebackCreditNote(ctx, p, stored)
	}
	kase := caseOfReceipt(chargebackCase(p, stored.Status), r)
	return func(tx *store.Tx, rec *records) error {
		if orderID != uuid.Nil {
			rec.payments = append(rec.payments, store.Payment{ID: p.ID, OrderID: orderID, Status: StatusChargeback,
				StatusRank: paymentRank[StatusChargeback], AmountMinor: p.AmountMinor, Currency: p.Currency})
		}
		_, err := tx.OpenCase(ctx, kase)
		return err
	}, nil
}

// chargebackCase is the case of charged-back payment p, recorded as
// recorded ("" when ingest never saw it). Its evidence says whether an
// invoice was asked for (the payment was recorded PAID), which decides
// whether accounting owes a credit note.
func chargebackCase(p psp.Payment, recorded string) store.Case {
	amount := p.AmountMinor
	if recorded == "" {
		recorded = "none"
	}
	return store.Case{Kind: cases.Chargeback, Subject: "payment:" + p.ID, PSPPaymentID: p.ID, OrderID: p.OrderID,
		AmountMinor: &amount, Currency: p.Currency,
		Evidence: map[string]any{"recorded_status": recorded, "invoiced": recorded == StatusPaid}}
}

// ChargebackRefundPrefix begins the id of the refund that stands for a
// chargeback credited automatically: chargeback-<payment id>.
const ChargebackRefundPrefix = "chargeback-"

// prepareChargebackCreditNote credits an invoiced payment charged back at
// a source configured so (chargeback: credit_note): in one transaction the
// payment moves to CHARGEBACK and a successful refund chargeback-<id> of
// what the payment's refunds left is recorded with its credit-note event,
// as a refund of that amount would be (the reconciler's sweep then watches
// its document like any refund's). Nothing left to credit (the payment was
// refunded in full) is no credit note.
func (w *Worker) prepareChargebackCreditNote(ctx context.Context, p psp.Payment, stored store.Payment) (write, error) {
	o, c, err := w.store.OrderWithCustomer(ctx, stored.OrderID)
	if err != nil {
		return nil, fmt.Errorf("order of payment %s: %w", p.ID, err)
	}
	return func(tx *store.Tx, rec *records) error {
		rec.payments = append(rec.payments, store.Payment{ID: p.ID, OrderID: stored.OrderID, Status: StatusChargeback,
			StatusRank: paymentRank[StatusChargeback], AmountMinor: stored.AmountMinor, Currency: stored.Currency})
		paid, err := tx.LockPayment(ctx, p.ID)
		if err != nil {
			return err
		}
		id := ChargebackRefundPrefix + p.ID
		refunded, err := tx.RefundedExcept(ctx, p.ID, id)
		if err != nil || paid-refunded <= 0 {
			return err
		}
		return recordRefund(ctx, tx, rec, psp.Refund{ID: id, PaymentID: p.ID, Status: StatusSuccess,
			AmountMinor: paid - refunded, Currency: stored.Currency}, o, c)
	}, nil
}
