package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Reasons an unmatched_payment or refused_refund case gives in its
// evidence (docs/cases.md).
const (
	ReasonAmountMismatch   = "amount_mismatch"
	ReasonCurrencyMismatch = "currency_mismatch"
	ReasonUnknownOrder     = "unknown_order"
	ReasonSecondPayment    = "second_payment"
	ReasonOverRefund       = "over_refund"
)

// unmatchedPayment is the case of paid payment p that its order o does
// not take; reason says why.
func unmatchedPayment(p psp.Payment, o store.Order, reason string) *store.Case {
	amount := p.AmountMinor
	ev := map[string]any{"reason": reason, "payment_status": p.Status}
	if o.MerchantOrderID != "" {
		ev["order_amount_minor"], ev["order_currency"] = o.AmountMinor, o.Currency
	}
	return &store.Case{Kind: cases.UnmatchedPayment, Subject: "payment:" + p.ID, PSPPaymentID: p.ID,
		OrderID: p.OrderID, AmountMinor: &amount, Currency: p.Currency, Evidence: ev}
}

// mismatch returns why p does not match o, or "" when it does. A payment
// charged in another currency than the order's matches when the PSP
// reports the conversion: the amount it converted from is compared with the
// order's, like with like.
func mismatch(p psp.Payment, o store.Order) string {
	amount, currency := p.AmountMinor, p.Currency
	if c := p.Conversion; c != nil && currency != o.Currency {
		amount, currency = c.AmountMinor, c.Currency
	}
	switch {
	case currency != o.Currency:
		return ReasonCurrencyMismatch
	case amount != o.AmountMinor:
		return ReasonAmountMismatch
	}
	return ""
}

// refusedRefund is the case of refund r refused for reason; extra adds
// to its evidence.
func refusedRefund(r psp.Refund, reason string, extra map[string]any) *store.Case {
	amount := r.AmountMinor
	ev := map[string]any{"reason": reason, "refund_status": r.Status}
	for k, v := range extra {
		ev[k] = v
	}
	return &store.Case{Kind: cases.RefusedRefund, Subject: "refund:" + r.ID, PSPPaymentID: r.PaymentID,
		PSPRefundID: r.ID, AmountMinor: &amount, Currency: r.Currency, Evidence: ev}
}

// errUnknownOrder is a paid payment whose order is not recorded: retried
// (the order may be recorded late), and an unmatched_payment case once
// its receipt is parked.
type errUnknownOrder struct {
	p   psp.Payment
	err error
}

func (e errUnknownOrder) Error() string {
	return fmt.Sprintf("order of payment %s, not recorded yet: %v", e.p.ID, e.err)
}

func (e errUnknownOrder) Unwrap() error { return e.err }

// rejectWithCase finishes receipt r as rejected and opens (or touches) its
// case in one transaction.
func (w *Worker) rejectWithCase(ctx context.Context, r store.Receipt, token uuid.UUID, rej errRejected) error {
	return w.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.FinishReceipt(ctx, r.ID, token, "rejected", &rej.reason); err != nil {
			return err
		}
		_, err := tx.OpenCase(ctx, caseOfReceipt(*rej.kase, r))
		return err
	})
}

// park parks receipt r after its last failed attempt and opens its case in
// one transaction: an unmatched_payment for a paid payment whose order is
// unknown, a parked_receipt otherwise.
func (w *Worker) park(ctx context.Context, r store.Receipt, token uuid.UUID, cause error, next time.Time) error {
	return w.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.RetryReceiptLater(ctx, r.ID, token, cause.Error(), next, true); err != nil {
			return err
		}
		_, err := tx.OpenCase(ctx, caseOfReceipt(parkedCase(r, cause), r))
		return err
	})
}

func parkedCase(r store.Receipt, cause error) store.Case {
	var unknown errUnknownOrder
	if errors.As(cause, &unknown) && unknown.p.Status == StatusPaid {
		return *unmatchedPayment(unknown.p, store.Order{}, ReasonUnknownOrder)
	}
	c := store.Case{Kind: cases.ParkedReceipt, Subject: fmt.Sprintf("receipt:%d", r.ID),
		Evidence: map[string]any{"event_type": r.EventType, "event_id": r.EventID, "attempts": r.Attempts + 1}}
	switch r.EventType {
	case "payment":
		c.PSPPaymentID = r.EventID
	case "refund":
		c.PSPRefundID = r.EventID
	}
	return c
}

// caseOfReceipt sets c's PSP and receipt from r.
func caseOfReceipt(c store.Case, r store.Receipt) store.Case {
	id := r.ID
	c.PSP, c.ReceiptID = r.Source, &id
	return c
}
