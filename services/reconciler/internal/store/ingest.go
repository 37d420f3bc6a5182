package store

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"
)

// IngestReader reads the ingest schema; the reconciler opens its connection
// read-only.
type IngestReader struct{ q *dbsqlc.Queries }

// NewIngestReader returns a reader of the ingest schema through db.
func NewIngestReader(db DB) *IngestReader { return &IngestReader{q: dbsqlc.New(db)} }

// ParkedEvent is an outbox row parked because it could not be published.
type ParkedEvent struct {
	EventKey, EventType string
	Reason              string // why it was parked; "" when none was given
}

// Receipt is a webhook receipt that is stuck (never its body).
type Receipt struct {
	ID                      int64
	Source, EventID, Status string
	Attempts                int
	ClaimExpired            bool // a worker claimed it and its claim expired
}

// Payment is a paid payment: its id and when it was paid.
type Payment struct {
	ID     string
	PaidAt time.Time
}

// Refund is a succeeded refund: its id and when it succeeded.
type Refund struct {
	ID          string
	SucceededAt time.Time
}

// ParkedOutbox returns at most limit parked rows of ingest's outbox, oldest
// first. Its errors are the database's.
func (r *IngestReader) ParkedOutbox(ctx context.Context, limit int) ([]ParkedEvent, error) {
	rows, err := r.q.IngestOutboxParked(ctx, int32(limit))
	if err != nil {
		return nil, pg.Interpret(err, "ingest outbox")
	}
	out := make([]ParkedEvent, len(rows))
	for i, row := range rows {
		out[i] = ParkedEvent{EventKey: row.EventKey, EventType: row.EventType, Reason: row.Reason}
	}
	return out, nil
}

// StuckReceipts returns at most limit receipts, oldest first, that are
// parked, pending since before pendingBefore, or claimed by a worker whose
// claim expired before claimExpiredBefore. Its errors are the database's.
func (r *IngestReader) StuckReceipts(ctx context.Context, claimExpiredBefore, pendingBefore time.Time, limit int) ([]Receipt, error) {
	rows, err := r.q.ReceiptsStuck(ctx, &claimExpiredBefore, pendingBefore, int32(limit))
	if err != nil {
		return nil, pg.Interpret(err, "receipts")
	}
	out := make([]Receipt, len(rows))
	for i, row := range rows {
		out[i] = Receipt{ID: row.ID, Source: row.Source, EventID: row.EventID, Status: row.Status,
			Attempts: int(row.Attempts), ClaimExpired: row.ClaimExpired}
	}
	return out, nil
}

// PaymentsPaidBefore returns one keyset page of at most limit payments paid
// before before, in (PaidAt, ID) order, strictly after after (the zero
// Payment starts at the oldest). Its errors are the database's.
func (r *IngestReader) PaymentsPaidBefore(ctx context.Context, before time.Time, after Payment, limit int) ([]Payment, error) {
	rows, err := r.q.PaymentsPaidBefore(ctx, dbsqlc.PaymentsPaidBeforeParams{
		PaidBefore: before, AfterPaidAt: after.PaidAt, AfterID: after.ID, PageSize: int32(limit),
	})
	if err != nil {
		return nil, pg.Interpret(err, "read paid payments")
	}
	out := make([]Payment, len(rows))
	for i, row := range rows {
		out[i] = Payment{ID: row.ID, PaidAt: row.PaidAt}
	}
	return out, nil
}

// RefundsSucceededBefore returns one keyset page of at most limit refunds
// that succeeded before before, in (SucceededAt, ID) order, strictly after
// after (the zero Refund starts at the oldest). Its errors are the
// database's.
func (r *IngestReader) RefundsSucceededBefore(ctx context.Context, before time.Time, after Refund, limit int) ([]Refund, error) {
	rows, err := r.q.RefundsSucceededBefore(ctx, dbsqlc.RefundsSucceededBeforeParams{
		SucceededBefore: before, AfterSucceededAt: after.SucceededAt, AfterID: after.ID, PageSize: int32(limit),
	})
	if err != nil {
		return nil, pg.Interpret(err, "read succeeded refunds")
	}
	out := make([]Refund, len(rows))
	for i, row := range rows {
		out[i] = Refund{ID: row.ID, SucceededAt: row.SucceededAt}
	}
	return out, nil
}

// Money is what a payment or refund moved: for a case's columns.
type Money struct {
	PaymentID   string // the payment, or the refunded one
	AmountMinor int64
	Currency    string
	OrderID     string // the merchant's order id; "" when unknown
}

// PaymentMoney returns payment id's money; errkind.NotFound when there is
// no such payment.
func (r *IngestReader) PaymentMoney(ctx context.Context, id string) (Money, error) {
	row, err := r.q.PaymentMoney(ctx, id)
	if err != nil {
		return Money{}, pg.Interpret(err, "payment %s", id)
	}
	return Money{PaymentID: row.ID, AmountMinor: row.AmountMinor, Currency: row.Currency, OrderID: row.OrderID}, nil
}

// RefundMoney returns refund id's money; errkind.NotFound when there is no
// such refund.
func (r *IngestReader) RefundMoney(ctx context.Context, id string) (Money, error) {
	row, err := r.q.RefundMoney(ctx, id)
	if err != nil {
		return Money{}, pg.Interpret(err, "refund %s", id)
	}
	return Money{PaymentID: row.PaymentID, AmountMinor: row.AmountMinor, Currency: row.Currency, OrderID: row.OrderID}, nil
}

// RecordedPayment is a payment as ingest recorded it, for the PSP audit.
type RecordedPayment struct {
	ID, Status  string
	AmountMinor int64
	Currency    string
}

// PaymentsByID returns ingest's record of the payments among ids that it
// holds, by id.
func (r *IngestReader) PaymentsByID(ctx context.Context, ids []string) (map[string]RecordedPayment, error) {
	rows, err := r.q.PaymentsByID(ctx, ids)
	if err != nil {
		return nil, pg.Interpret(err, "ingest payments by id")
	}
	out := make(map[string]RecordedPayment, len(rows))
	for _, row := range rows {
		out[row.ID] = RecordedPayment{ID: row.ID, Status: row.Status, AmountMinor: row.AmountMinor, Currency: row.Currency}
	}
	return out, nil
}

// KnownOrders returns the merchant order ids among ids that ingest holds.
func (r *IngestReader) KnownOrders(ctx context.Context, ids []string) (map[string]bool, error) {
	rows, err := r.q.KnownOrders(ctx, ids)
	if err != nil {
		return nil, pg.Interpret(err, "ingest orders by merchant id")
	}
	out := make(map[string]bool, len(rows))
	for _, id := range rows {
		out[id] = true
	}
	return out, nil
}

// RefundsByID returns ingest's record of the refunds among ids that it
// holds, by id (as RecordedPayment: a refund has the same fields).
func (r *IngestReader) RefundsByID(ctx context.Context, ids []string) (map[string]RecordedPayment, error) {
	rows, err := r.q.RefundsByID(ctx, ids)
	if err != nil {
		return nil, pg.Interpret(err, "ingest refunds by id")
	}
	out := make(map[string]RecordedPayment, len(rows))
	for _, row := range rows {
		out[row.ID] = RecordedPayment{ID: row.ID, Status: row.Status, AmountMinor: row.AmountMinor, Currency: row.Currency}
	}
	return out, nil
}
