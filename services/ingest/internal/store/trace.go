package store

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// Trace is what ingest holds about the payments one identifier names: the
// orders, payments and refunds, the receipts that told of them (never their
// bodies) and the outbox rows they produced.
type Trace struct {
	Orders   []TraceOrder
	Payments []TracePayment
	Refunds  []TraceRefund
	Receipts []TraceReceipt
	Outbox   []TraceOutbox
	// Fetches are the calls to the PSP about these payments, refunds and
	// orders (by merchant order id), oldest first.
	Fetches []PSPFetch
}

// TraceOrder is an order without its customer's personal data: the
// customer id is kept so an operator can reveal it.
type TraceOrder struct {
	ID              uuid.UUID
	MerchantOrderID string
	CustomerID      uuid.UUID
	AmountMinor     int64
	Currency        string
	CreatedAt       time.Time
}

// TracePayment is a PSP payment's recorded state with its times.
type TracePayment struct {
	ID          string
	OrderID     uuid.UUID
	Status      string
	AmountMinor int64
	Currency    string
	PaidAt      *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// TraceRefund is a PSP refund's recorded state with its times.
type TraceRefund struct {
	ID          string
	PaymentID   string
	Status      string
	AmountMinor int64
	Currency    string
	SucceededAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// TraceReceipt is a webhook receipt without its body.
type TraceReceipt struct {
	ID          int64
	Source      string
	EventID     string
	EventType   string
	Status      string
	Attempts    int32
	LastError   *string
	Traceparent string
	ReceivedAt  time.Time
	ProcessedAt *time.Time
}

// TraceOutbox is an outbox row without its payload.
type TraceOutbox struct {
	ID           int64
	EventKey     string
	EventType    string
	Traceparent  string
	CreatedAt    time.Time
	Attempts     int32
	LastError    *string
	PublishedAt  *time.Time
	ParkedAt     *time.Time
	ParkedReason *string
}

// traceIDs collects the payment and refund ids a search found, in order.
type traceIDs struct {
	payments, refunds []string
	seen              map[string]bool
}

func (t *traceIDs) add(kind, id string) {
	if id == "" || t.seen[kind+":"+id] {
		return
	}
	t.seen[kind+":"+id] = true
	if kind == "payment" {
		t.payments = append(t.payments, id)
	} else {
		t.refunds = append(t.refunds, id)
	}
}

// Trace finds the payments and refunds q names — a PSP payment or refund
// id, an order id, a merchant order id, a webhook event id or a trace id —
// and returns what ingest holds about them. Every look-up is an index
// scan. An identifier that names nothing gives an empty Trace.
func (s *Store) Trace(ctx context.Context, q string) (Trace, error) {
	ids := &traceIDs{seen: map[string]bool{}}
	if err := s.resolveTrace(ctx, q, ids); err != nil {
		return Trace{}, err
	}
	var tr Trace
	orders := map[uuid.UUID]bool{}
	for _, id := range ids.payments {
		if err := s.tracePayment(ctx, id, ids, orders, &tr); err != nil {
			return Trace{}, err
		}
	}
	for _, id := range ids.refunds {
		if err := s.traceRefund(ctx, id, &tr); err != nil {
			return Trace{}, err
		}
	}
	objects := append(append([]string{}, ids.payments...), ids.refunds...)
	for _, r := range tr.Refunds {
		objects = append(objects, r.ID)
	}
	for _, o := range tr.Orders {
		objects = append(objects, o.MerchantOrderID)
	}
	if len(objects) == 0 {
		return tr, nil
	}
	fetches, err := s.PSPFetchesOf(ctx, objects)
	tr.Fetches = fetches
	return tr, err
}

// resolveTrace turns q into payment and refund ids.
func (s *Store) resolveTrace(ctx context.Context, q string, ids *traceIDs) error {
	if _, err := s.q.PaymentGet(ctx, q); err == nil {
		ids.add("payment", q)
	} else if err := notFoundOK(err, "payment"); err != nil {
		return err
	}
	if r, err := s.q.TraceRefundGet(ctx, q); err == nil {
		ids.add("payment", r.PaymentID)
	} else if err := notFoundOK(err, "refund"); err != nil {
		return err
	}
	if err := s.resolveOrder(ctx, q, ids); err != nil {
		return err
	}
	return s.resolveReceipts(ctx, q, ids)
}

func (s *Store) resolveOrder(ctx context.Context, q string, ids *traceIDs) error {
	var orderID uuid.UUID
	if id, err := uuid.Parse(q); err == nil {
		orderID = id
	} else if o, err := s.q.TraceOrderByMerchantID(ctx, q); err == nil {
		orderID = o.ID
	} else if err := notFoundOK(err, "order"); err != nil {
		return err
	}
	if orderID == uuid.Nil {
		return nil
	}
	pays, err := s.q.TracePaymentsOfOrder(ctx, orderID)
	if err != nil {
		return pg.Interpret(err, "payments of order")
	}
	for _, p := range pays {
		ids.add("payment", p.ID)
	}
	return nil
}

// resolveReceipts adds the payment or refund whose receipts an event id
// names, and those of the receipts a trace id finds. A PSP's receipt is
// keyed "<kind>:<event id>:<STATUS>" (webhook.StatusKey), so its event id
// is found by the prefix of the dedupe key, through the key's unique index;
// a receipt keyed "event:<id>" names no payment.
func (s *Store) resolveReceipts(ctx context.Context, q string, ids *traceIDs) error {
	for _, kind := range []string{"payment", "refund"} {
		if ids.seen[kind+":"+q] {
			continue // found already; its trace reads these receipts
		}
		byEvent, err := s.q.TraceReceiptsByDedupePrefix(ctx, kind+":"+q+":", kind+":"+q+";")
		if err != nil {
			return pg.Interpret(err, "receipts by event id")
		}
		if len(byEvent) > 0 {
			ids.add(kind, q)
		}
	}
	byTrace, err := s.q.TraceReceiptsByTraceID(ctx, strings.ToLower(q))
	if err != nil {
		return pg.Interpret(err, "receipts by trace id")
	}
	if len(byTrace) == 0 {
		return nil
	}
	found := make([]int64, len(byTrace))
	for i, r := range byTrace {
		found[i] = r.ID
	}
	keys, err := s.q.TraceReceiptDedupeKeys(ctx, found)
	if err != nil {
		return pg.Interpret(err, "receipt dedupe keys")
	}
	for _, k := range keys {
		parts := strings.Split(k, ":")
		if len(parts) == 3 && (parts[0] == "payment" || parts[0] == "refund") {
			ids.add(parts[0], parts[1])
		}
	}
	return nil
}

// tracePayment adds payment id, its order, refunds, receipts and outbox
// rows to tr; its refunds join ids.
func (s *Store) tracePayment(ctx context.Context, id string, ids *traceIDs, orders map[uuid.UUID]bool, tr *Trace) error {
	p, err := s.q.PaymentGet(ctx, id)
	if err != nil {
		if err := notFoundOK(err, "payment"); err != nil {
			return err
		}
		return s.traceEvents(ctx, "payment", id, "paid", tr)
	}
	tr.Payments = append(tr.Payments, TracePayment{ID: p.ID, OrderID: p.OrderID, Status: p.Status,
		AmountMinor: p.AmountMinor, Currency: p.Currency, PaidAt: p.PaidAt, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt})
	if !orders[p.OrderID] {
		orders[p.OrderID] = true
		row, err := s.q.OrderGet(ctx, p.OrderID)
		o := row.IngestOrder
		if err != nil {
			return pg.Interpret(err, "order of payment %s", id)
		}
		tr.Orders = append(tr.Orders, TraceOrder{ID: o.ID, MerchantOrderID: o.MerchantOrderID, CustomerID: o.CustomerID,
			AmountMinor: o.AmountMinor, Currency: o.Currency, CreatedAt: o.CreatedAt})
	}
	refunds, err := s.q.TraceRefundsOfPayment(ctx, id)
	if err != nil {
		return pg.Interpret(err, "refunds of payment %s", id)
	}
	for _, r := range refunds {
		ids.add("refund", r.ID)
	}
	return s.traceEvents(ctx, "payment", id, "paid", tr)
}

func (s *Store) traceRefund(ctx context.Context, id string, tr *Trace) error {
	r, err := s.q.TraceRefundGet(ctx, id)
	if err == nil {
		tr.Refunds = append(tr.Refunds, TraceRefund{ID: r.ID, PaymentID: r.PaymentID, Status: r.Status, AmountMinor: r.AmountMinor,
			Currency: r.Currency, SucceededAt: r.SucceededAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
	} else if err := notFoundOK(err, "refund"); err != nil {
		return err
	}
	return s.traceEvents(ctx, "refund", id, "succeeded", tr)
}

// traceEvents adds the receipts of kind id and its outbox row.
func (s *Store) traceEvents(ctx context.Context, kind, id, final string, tr *Trace) error {
	prefix := kind + ":" + id + ":"
	receipts, err := s.q.TraceReceiptsByDedupePrefix(ctx, prefix, kind+":"+id+";")
	if err != nil {
		return pg.Interpret(err, "receipts of %s %s", kind, id)
	}
	for _, r := range receipts {
		tr.Receipts = append(tr.Receipts, TraceReceipt(r))
	}
	rows, err := s.q.TraceOutboxByKeys(ctx, []string{prefix + final})
	if err != nil {
		return pg.Interpret(err, "outbox of %s %s", kind, id)
	}
	for _, r := range rows {
		tr.Outbox = append(tr.Outbox, TraceOutbox(r))
	}
	return nil
}

// notFoundOK is nil for no rows and the interpreted error otherwise.
func notFoundOK(err error, what string) error {
	err = pg.Interpret(err, "trace %s", what)
	if errkind.Is(err, errkind.NotFound) {
		return nil
	}
	return err
}

// PersonalData is a customer's personal data, shown only to an operator
// who reveals it.
type PersonalData dbsqlc.CustomerRevealRow

// RevealCustomer returns customer id's personal data, or an error of kind
// NotFound.
func (s *Store) RevealCustomer(ctx context.Context, id uuid.UUID) (PersonalData, error) {
	row, err := s.q.CustomerReveal(ctx, id)
	if err != nil {
		return PersonalData{}, pg.Interpret(err, "customer %s", id)
	}
	return PersonalData(row), nil
}

// ReceiptParked counts the parked receipts.
func (s *Store) ReceiptParked(ctx context.Context) (int64, error) {
	n, err := s.q.ReceiptParkedCount(ctx)
	return n, pg.Interpret(err, "count parked receipts")
}

// OutboxStats counts ingest's pending and parked outbox rows from their
// partial indexes.
func (s *Store) OutboxStats(ctx context.Context) (outbox.Stats, error) {
	return outbox.ReadStats(ctx, s.pool, Outbox)
}
