package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"

	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// preparePayment re-fetches payment id; a chargeback is prepared at once,
// any other payment awaits its order (see readOrders).
func (w *Worker) preparePayment(ctx context.Context, adapter PSP, r store.Receipt) (prepared, error) {
	p, err := adapter.Payment(ctx, r.EventID)
	if err != nil {
		return prepared{}, err
	}
	w.log.Debug("payment fetched", zap.String("id", p.ID), zap.String("status", p.Status),
		zap.String("status_code", p.StatusCode), zap.Time("psp_created", p.Created))
	if p.Status == StatusChargeback {
		wr, err := w.prepareChargeback(ctx, p, r)
		return prepared{write: wr}, err
	}
	a := &awaitingOrder{p: p}
	a.finish = func(o store.Order, c store.Customer, err error) (prepared, error) {
		return w.preparePaid(ctx, r, a.p, o, c, err)
	}
	return prepared{order: a}, nil
}

// awaitingOrder is a fetched payment awaiting its order: finish prepares
// it once the order is read (or failed to be).
type awaitingOrder struct {
	p      psp.Payment
	finish func(o store.Order, c store.Customer, err error) (prepared, error)
}

// preparePaid checks payment p against its order o (read with err); its
// write records the payment's state and, when it is paid, the invoice
// event. paid is the second-payment check the write needs (see paidCheck).
func (w *Worker) preparePaid(ctx context.Context, r store.Receipt, p psp.Payment, o store.Order, c store.Customer, err error) (prepared, error) {
	if errkind.Is(err, errkind.NotFound) {
		return prepared{}, errUnknownOrder{p: p, err: err}
	}
	if err != nil {
		return prepared{}, fmt.Errorf("order of payment %s: %w", p.ID, err)
	}
	if reason := mismatch(p, o); reason != "" && !w.accepted(ctx, p) {
		rej := errRejected{reason: fmt.Sprintf("payment %s does not match order %s: %s", p.ID, o.MerchantOrderID, reason)}
		if p.Status == StatusPaid {
			rej.kase = unmatchedPayment(p, o, reason)
		}
		return prepared{}, rej
	}
	check := paidCheck(p, o)
	return prepared{paid: check, write: func(tx *store.Tx, rec *records) error {
		if check != nil {
			if err := rec.checkFirstPaid(p, o); err != nil {
				return err
			}
		}
		if err := recordListedRefunds(ctx, tx, r, p); err != nil {
			return err
		}
		return recordPayment(ctx, rec, p, o, c)
	}}, nil
}

// readOrders reads, in one statement, the orders batch's awaiting payments
// name, and finishes their preparation; a payment naming none, or an order
// not found that way, is looked up alone (orderOf). A payment whose order
// cannot be read carries the error.
func (w *Worker) readOrders(ctx context.Context, batch []*staged) {
	var ids []string
	for _, s := range batch {
		if s.order != nil && s.order.p.OrderID != "" {
			ids = append(ids, s.order.p.OrderID)
		}
	}
	var found map[string]store.OrderWithCustomer
	if len(ids) > 0 {
		var err error
		if found, err = w.store.OrdersWithCustomerByMerchantIDs(ctx, ids); err != nil {
			found = nil // each is looked up alone, and fails on its own
		}
	}
	for _, s := range batch {
		if s.order == nil {
			continue
		}
		a := s.order
		oc, ok := found[a.p.OrderID]
		o, c, err := oc.Order, oc.Customer, error(nil)
		if !ok {
			o, c, err = w.orderOf(ctx, &a.p)
		}
		s.prepared, s.err = a.finish(o, c, err)
	}
}

// recordListedRefunds records a receipt for each refund p lists, in its
// status, under the key a refund webhook of that status would have: a PSP
// that notifies a refund as a change of its payment (Mercado Pago) gets
// each refund re-fetched and applied as its own, once per status.
func recordListedRefunds(ctx context.Context, tx *store.Tx, from store.Receipt, p psp.Payment) error {
	for _, ref := range p.Refunds {
		body, err := json.Marshal(map[string]string{"listed_on_payment": p.ID, "status": ref.Status})
		if err != nil {
			return err
		}
		_, err = tx.InsertReceipt(ctx, store.NewReceipt{Source: from.Source, Scope: from.Scope, Kind: from.Kind,
			DedupeKey: webhook.StatusKey("refund", ref.ID, ref.Status), EventID: ref.ID, EventType: "refund", Body: body})
		if err != nil {
			return err
		}
	}
	return nil
}

// orderOf finds p's order by its order reference or, when p carries none
// or names no order, by the PSP payment id an order was recorded with; p
// then takes that order's reference.
func (w *Worker) orderOf(ctx context.Context, p *psp.Payment) (store.Order, store.Customer, error) {
	var o store.Order
	var c store.Customer
	err := errkind.New(errkind.NotFound, "payment %s names no order", p.ID)
	if p.OrderID != "" {
		o, c, err = w.store.OrderWithCustomerByMerchantID(ctx, p.OrderID)
	}
	if !errkind.Is(err, errkind.NotFound) {
		return o, c, err
	}
	o, c, linkedErr := w.store.OrderWithCustomerByPSPPaymentID(ctx, p.ID)
	if linkedErr != nil {
		return o, c, err
	}
	p.OrderID = o.MerchantOrderID
	return o, c, nil
}

// paidCheck is the second-payment check paid p needs, nil when it needs
// none: a payment must match the order's recorded one, so a second PAID
// payment is a case, never a second invoice; but a recurring order (a
// subscription) takes one payment per period, each its own sale.
func paidCheck(p psp.Payment, o store.Order) *store.PaidCheck {
	if p.Status != StatusPaid || o.Recurring {
		return nil
	}
	return &store.PaidCheck{OrderID: o.ID, PaymentID: p.ID}
}

// checkFirstPaid refuses paid p when its order o has another PAID payment,
// recorded or earlier in rec's batch (see records.lockPaid). p recorded
// PAID itself (re-delivered, or accepted as a sale of its own) is no
// second payment.
func (r *records) checkFirstPaid(p psp.Payment, o store.Order) error {
	if r.paidIDs[p.ID] {
		return nil
	}
	first, ok := r.firstPaid[o.ID]
	if !ok || first == p.ID {
		r.firstPaid[o.ID] = p.ID
		return nil
	}
	kase := unmatchedPayment(p, o, ReasonSecondPayment)
	kase.Evidence["first_payment_id"] = first
	return errRejected{reason: fmt.Sprintf("payment %s is a second paid payment on order %s", p.ID, o.MerchantOrderID), kase: kase}
}

// recordPayment moves the payment's state forward and, for a paid payment,
// adds the invoice event.
func recordPayment(ctx context.Context, r *records, p psp.Payment, o store.Order, c store.Customer) error {
	r.payments = append(r.payments, store.Payment{
		ID: p.ID, OrderID: o.ID, Status: p.Status, StatusRank: paymentRank[p.Status],
		AmountMinor: p.AmountMinor, Currency: p.Currency,
	})
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

// accepted reports whether paid payment p is recorded PAID already: an
// operator accepted it as a sale of its own, so seeing it again is no case.
func (w *Worker) accepted(ctx context.Context, p psp.Payment) bool {
	stored, err := w.store.Payment(ctx, p.ID)
	return err == nil && p.Status == StatusPaid && stored.Status == StatusPaid
}
