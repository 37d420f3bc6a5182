package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// Payment is a PSP payment's recorded state. StatusRank orders statuses: a
// status only replaces a lower-ranked one.
type Payment struct {
	ID          string
	OrderID     uuid.UUID
	Status      string
	StatusRank  int32
	AmountMinor int64
	Currency    string
}

// Refund is a PSP refund's recorded state, ranked like a payment's.
type Refund struct {
	ID          string
	PaymentID   string
	Status      string
	StatusRank  int32
	AmountMinor int64
	Currency    string
}

// OrderLink names the PSP payment of an order.
type OrderLink struct {
	OrderID      uuid.UUID
	PSPPaymentID string
}

// Payment returns the payment with id, or an error of kind NotFound.
func (s *Store) Payment(ctx context.Context, id string) (Payment, error) {
	row, err := s.q.PaymentGet(ctx, id)
	if err != nil {
		return Payment{}, pg.Interpret(err, "payment %s", id)
	}
	return Payment{ID: row.ID, OrderID: row.OrderID, Status: row.Status, StatusRank: row.StatusRank,
		AmountMinor: row.AmountMinor, Currency: row.Currency}, nil
}

// WatchRefund registers refund refundID of payment paymentID for the
// status poller; it returns false, and changes nothing, when the refund
// was registered before.
func (s *Store) WatchRefund(ctx context.Context, refundID, paymentID string) (added bool, err error) {
	n, err := s.q.RefundWatch(ctx, refundID, paymentID)
	if err != nil {
		return false, pg.Interpret(err, "watch refund %s", refundID)
	}
	return n > 0, nil
}

// PollWindow selects the unsettled payments and refunds to poll: created
// before SettleBefore and after GiveUpBefore, not polled since
// PolledBefore; at most Max of each.
type PollWindow struct {
	SettleBefore time.Time
	GiveUpBefore time.Time
	PolledBefore time.Time
	Max          int
}

// ClaimUnsettledPayments stamps up to w.Max orders whose PSP payment has no
// final state, so another poller skips them, and returns their PSP payment
// ids.
func (s *Store) ClaimUnsettledPayments(ctx context.Context, w PollWindow) ([]string, error) {
	rows, err := s.q.OrderClaimUnsettled(ctx, dbsqlc.OrderClaimUnsettledParams(w.params()))
	if err != nil {
		return nil, pg.Interpret(err, "claim unsettled orders")
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = *r.PspPaymentID
	}
	return ids, nil
}

// ClaimUnsettledRefunds stamps up to w.Max watched refunds with no final
// state, so another poller skips them, and returns their ids.
func (s *Store) ClaimUnsettledRefunds(ctx context.Context, w PollWindow) ([]string, error) {
	ids, err := s.q.RefundClaimUnsettled(ctx, w.params())
	if err != nil {
		return nil, pg.Interpret(err, "claim unsettled refunds")
	}
	return ids, nil
}

func (w PollWindow) params() dbsqlc.RefundClaimUnsettledParams {
	return dbsqlc.RefundClaimUnsettledParams{SettleBefore: w.SettleBefore, GiveUpBefore: w.GiveUpBefore,
		PolledBefore: &w.PolledBefore, MaxRows: int32(w.Max)}
}
