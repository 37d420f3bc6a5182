package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// Order is what a payment is validated against.
type Order struct {
	ID              uuid.UUID // set by InsertOrder
	MerchantOrderID string
	CustomerID      uuid.UUID
	AmountMinor     int64
	Currency        string
	Lines           json.RawMessage // the order's lines as JSON
	// PSPPaymentID is the PSP payment the order was created or amended
	// with; read back by Order, Orders and LockOrder, it is else the first
	// payment recorded for the order; nil until one is known.
	PSPPaymentID *string
	Recurring    bool      // a subscription: each matching PAID payment is its own sale
	PSPPlanID    *string   // the PSP plan a recurring order's buyer subscribes to, nil when not named
	CreatedAt    time.Time // set by InsertOrder
}

// InsertOrder records o under a new id, its first status poll due after
// the store's poll delay (SetPollAfter), and returns it as stored. An order
// whose merchant order id or PSP payment id is taken (by another order, or
// by a payment recorded for one) is an error of kind Conflict; one whose
// customer does not exist, of kind Invalid.
func (s *Store) InsertOrder(ctx context.Context, o Order) (Order, error) {
	id, err := newID()
	if err != nil {
		return Order{}, err
	}
	row, err := s.q.OrderInsert(ctx, dbsqlc.OrderInsertParams{ID: id,
		MerchantOrderID: o.MerchantOrderID, CustomerID: o.CustomerID, AmountMinor: o.AmountMinor,
		Currency: o.Currency, Lines: o.Lines, PspPaymentID: o.PSPPaymentID, Recurring: o.Recurring,
		PspPlanID: o.PSPPlanID, NextPollAt: new(time.Now().Add(s.pollAfter)),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, errkind.New(errkind.Conflict, "insert order %s: its PSP payment is recorded for another order", o.MerchantOrderID)
	}
	if err != nil {
		return Order{}, pg.Interpret(err, "insert order %s", o.MerchantOrderID)
	}
	return orderFromRow(row), nil
}

// SetPollAfter sets how long after its creation an order is first due for
// a status poll; it is 0, at once, until set. Call it before the store is
// shared.
func (s *Store) SetPollAfter(d time.Duration) { s.pollAfter = d }

// Order returns the order with id, or an error of kind NotFound.
func (s *Store) Order(ctx context.Context, id uuid.UUID) (Order, error) {
	row, err := s.q.OrderGet(ctx, id)
	if err != nil {
		return Order{}, pg.Interpret(err, "order %s", id)
	}
	return withFirstPayment(row.IngestOrder, row.FirstPaymentID), nil
}

// Orders returns up to max orders created after (afterCreated, afterID),
// oldest first.
func (s *Store) Orders(ctx context.Context, afterCreated time.Time, afterID uuid.UUID, max int) ([]Order, error) {
	rows, err := s.q.OrderList(ctx, afterCreated, afterID, int32(max))
	if err != nil {
		return nil, pg.Interpret(err, "list orders")
	}
	out := make([]Order, len(rows))
	for i, r := range rows {
		out[i] = withFirstPayment(r.IngestOrder, r.FirstPaymentID)
	}
	return out, nil
}

// withFirstPayment is the order of row, whose PSP payment is the first one
// recorded for it (first, "" before any) when it was created or amended
// with none. Ingest does not write that link into the order: it would
// change an indexed column of the order's row, and log the row and an
// entry in each of its indexes again, for every payment.
func withFirstPayment(row dbsqlc.IngestOrder, first string) Order {
	o := orderFromRow(row)
	if o.PSPPaymentID == nil && first != "" {
		o.PSPPaymentID = &first
	}
	return o
}

// OrderWithCustomer returns order id and its buyer in one round trip, or
// an error of kind NotFound.
func (s *Store) OrderWithCustomer(ctx context.Context, id uuid.UUID) (Order, Customer, error) {
	row, err := s.q.OrderWithCustomer(ctx, id)
	if err != nil {
		return Order{}, Customer{}, pg.Interpret(err, "order %s", id)
	}
	return orderFromRow(row.IngestOrder), customerFromRow(row.IngestCustomer), nil
}

// OrderWithCustomerByMerchantID returns the order with merchantOrderID
// and its buyer in one round trip, or an error of kind NotFound.
func (s *Store) OrderWithCustomerByMerchantID(ctx context.Context, merchantOrderID string) (Order, Customer, error) {
	return orderWithCustomerByMerchantID(ctx, s.q, merchantOrderID)
}

// OrderWithCustomerByMerchantID is Store.OrderWithCustomerByMerchantID
// inside tx, so an action that invoices the order reads it on the
// transaction's own connection.
func (t *Tx) OrderWithCustomerByMerchantID(ctx context.Context, merchantOrderID string) (Order, Customer, error) {
	return orderWithCustomerByMerchantID(ctx, t.q, merchantOrderID)
}

// OrderWithCustomer is an order with its buyer.
type OrderWithCustomer struct {
	Order    Order
	Customer Customer
}

// OrdersWithCustomerByMerchantIDs returns, by merchant order id, those of
// the orders with merchantOrderIDs that exist, with their buyers, in one
// round trip.
func (s *Store) OrdersWithCustomerByMerchantIDs(ctx context.Context, merchantOrderIDs []string) (map[string]OrderWithCustomer, error) {
	rows, err := s.q.OrdersWithCustomerByMerchantIDs(ctx, merchantOrderIDs)
	if err != nil {
		return nil, pg.Interpret(err, "read %d orders", len(merchantOrderIDs))
	}
	out := make(map[string]OrderWithCustomer, len(rows))
	for _, r := range rows {
		out[r.IngestOrder.MerchantOrderID] = OrderWithCustomer{orderFromRow(r.IngestOrder), customerFromRow(r.IngestCustomer)}
	}
	return out, nil
}

// OrderWithCustomerByPSPPaymentID returns the order of PSP payment id (the
// one created or amended with it, or the one it is recorded for) and its
// buyer, or an error of kind NotFound.
func (s *Store) OrderWithCustomerByPSPPaymentID(ctx context.Context, id string) (Order, Customer, error) {
	row, err := s.q.OrderWithCustomerByPSPPaymentID(ctx, &id)
	if err != nil {
		return Order{}, Customer{}, pg.Interpret(err, "order of PSP payment %s", id)
	}
	return orderFromRow(row.IngestOrder), customerFromRow(row.IngestCustomer), nil
}

func orderWithCustomerByMerchantID(ctx context.Context, q *dbsqlc.Queries, merchantOrderID string) (Order, Customer, error) {
	row, err := q.OrderWithCustomerByMerchantID(ctx, merchantOrderID)
	if err != nil {
		return Order{}, Customer{}, pg.Interpret(err, "order %s", merchantOrderID)
	}
	return orderFromRow(row.IngestOrder), customerFromRow(row.IngestCustomer), nil
}

func orderFromRow(r dbsqlc.IngestOrder) Order {
	return Order{ID: r.ID, MerchantOrderID: r.MerchantOrderID, CustomerID: r.CustomerID, AmountMinor: r.AmountMinor,
		Currency: r.Currency, Lines: r.Lines, PSPPaymentID: r.PspPaymentID, Recurring: r.Recurring, PSPPlanID: r.PspPlanID, CreatedAt: r.CreatedAt}
}

// LockOrder returns order id locked until tx ends, or an error of kind
// NotFound.
func (t *Tx) LockOrder(ctx context.Context, id uuid.UUID) (Order, error) {
	row, err := t.q.OrderLock(ctx, id)
	if err != nil {
		return Order{}, pg.Interpret(err, "order %s", id)
	}
	return withFirstPayment(row.IngestOrder, row.FirstPaymentID), nil
}

// AmendOrder writes o's amount, currency, lines and PSP payment in tx and
// returns it as stored. A PSP payment id another order holds is an error of
// kind Conflict.
func (t *Tx) AmendOrder(ctx context.Context, o Order) (Order, error) {
	row, err := t.q.OrderAmend(ctx, dbsqlc.OrderAmendParams{ID: o.ID, AmountMinor: o.AmountMinor, Currency: o.Currency,
		Lines: o.Lines, PspPaymentID: o.PSPPaymentID})
	if err != nil {
		return Order{}, pg.Interpret(err, "amend order %s", o.ID)
	}
	return orderFromRow(row), nil
}
