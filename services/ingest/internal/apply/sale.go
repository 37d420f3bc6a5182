package apply

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Sale is a PSP payment an operator accepts as a sale of its own (a
// mismatched payment, or a second one on a paid order): invoiced for the
// PSP's amount and currency, as the order's buyer.
type Sale struct {
	PaymentID   string
	AmountMinor int64
	Currency    string
	Order       store.Order
	Customer    store.Customer
}

// RecordSale records s's payment as PAID with the PSP's amount and adds
// the invoice event (keyed
// payment:<id>:paid like apply's, so the invoicer records one document per
// payment and a second payment's document is a separate one), all in tx.
func RecordSale(ctx context.Context, tx *store.Tx, s Sale) error {
	err := tx.ApplyPayments(ctx, []store.Payment{{ID: s.PaymentID, OrderID: s.Order.ID, Status: StatusPaid,
		StatusRank: paymentRank[StatusPaid], AmountMinor: s.AmountMinor, Currency: s.Currency}})
	if err != nil {
		return err
	}
	msg, err := message(saleEvent(s))
	if err != nil {
		return err
	}
	var r records
	r.event(ctx, msg)
	_, err = tx.InsertEvents(ctx, r.events)
	return err
}

// saleEvent is the invoice event of s: one line for the PSP's amount,
// since the order's lines add up to another.
func saleEvent(s Sale) *eventsv1.BillingEvent {
	o := s.Order
	return &eventsv1.BillingEvent{
		EventKey: "payment:" + s.PaymentID + ":paid", Kind: eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE,
		SourceKind: "payment", SourceRef: s.PaymentID, MerchantOrderId: o.MerchantOrderID,
		AmountMinor: s.AmountMinor, Currency: s.Currency, Buyer: buyer(s.Customer), OccurredAt: timestamppb.Now(),
		Lines: []*eventsv1.Line{{Description: "Order " + o.MerchantOrderID, Quantity: 1, UnitMinor: s.AmountMinor, AmountMinor: s.AmountMinor}},
	}
}
