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

// PollWindow selects what to poll, at most Max of each kind. An order is
// claimed once its next poll is due by Now (see Store.SetPollAfter for its
// first) and polled while created after GiveUpBefore (an order with a PAID
// payment: after PaidGiveUpBefore); it is due again Every after its first
// poll, the period doubled after each poll up to EveryMax, while it will
// still be within its give-up then. A refund is polled when created
// before SettleBefore and after GiveUpBefore, and not polled since
// PolledBefore. A recurring order created before GiveUpBefore is polled
// again when not polled since RecurringPolledBefore while a payment of it
// was recorded after RecurringGiveUpBefore, or while it names a PSP plan
// and was created after RecurringGiveUpBefore.
type PollWindow struct {
	Now                   time.Time
	Every                 time.Duration
	EveryMax              time.Duration
	SettleBefore          time.Time
	GiveUpBefore          time.Time
	PaidGiveUpBefore      time.Time
	PolledBefore          time.Time
	RecurringPolledBefore time.Time
	RecurringGiveUpBefore time.Time
	Max                   int
}

// DueOrder is an order the poller searches the PSP for, with the ids of
// its known payments that have no final state and, for a recurring order,
// of all its recorded payments (empty for another) and the PSP plan it
// names (empty when none).
type DueOrder struct {
	MerchantOrderID   string
	Unsettled         []string
	RecurringPayments []string
	PSPPlanID         string
}

// ClaimDueOrders takes up to w.Max orders due for a poll, schedules their
// next poll (or none past their give-up), and returns those within their
// give-up, stamped.
func (s *Store) ClaimDueOrders(ctx context.Context, w PollWindow) ([]DueOrder, error) {
	rows, err := s.q.OrderClaimDue(ctx, dbsqlc.OrderClaimDueParams{Now: w.Now, MaxRows: int32(w.Max),
		GiveUpBefore: w.GiveUpBefore, PaidGiveUpBefore: w.PaidGiveUpBefore,
		EverySeconds: w.Every.Seconds(), EveryMaxSeconds: max(w.EveryMax, w.Every).Seconds()})
	if err != nil {
		return nil, pg.Interpret(err, "claim due orders")
	}
	out := make([]DueOrder, len(rows))
	for i, r := range rows {
		out[i] = DueOrder{MerchantOrderID: r.MerchantOrderID, Unsettled: r.Unsettled, RecurringPayments: r.RecurringPayments,
			PSPPlanID: deref(r.PspPlanID)}
	}
	return out, nil
}

// EarliestPollDue returns when the earliest scheduled order poll is due,
// the zero time when no order is on the schedule; long past means the
// poller is behind.
func (s *Store) EarliestPollDue(ctx context.Context) (time.Time, error) {
	unix, err := s.q.OrderPollEarliestDue(ctx)
	if err != nil {
		return time.Time{}, pg.Interpret(err, "earliest poll due")
	}
	return fromUnix(unix), nil
}

// ClaimDueRecurringOrders stamps up to w.Max recurring orders past the
// young orders' window that are due for a poll (see PollWindow), so
// another poller skips them, and returns them.
func (s *Store) ClaimDueRecurringOrders(ctx context.Context, w PollWindow) ([]DueOrder, error) {
	rows, err := s.q.OrderClaimDueRecurring(ctx, dbsqlc.OrderClaimDueRecurringParams{GiveUpBefore: w.GiveUpBefore,
		PolledBefore: w.RecurringPolledBefore, RecurringGiveUpBefore: w.RecurringGiveUpBefore, MaxRows: int32(w.Max)})
	if err != nil {
		return nil, pg.Interpret(err, "claim due recurring orders")
	}
	out := make([]DueOrder, len(rows))
	for i, r := range rows {
		out[i] = DueOrder{MerchantOrderID: r.MerchantOrderID, Unsettled: r.Unsettled, RecurringPayments: r.RecurringPayments,
			PSPPlanID: deref(r.PspPlanID)}
	}
	return out, nil
}

// ClaimUnsettledRefunds stamps up to w.Max watched refunds with no final
// state, so another poller skips them, and returns their ids.
func (s *Store) ClaimUnsettledRefunds(ctx context.Context, w PollWindow) ([]string, error) {
	ids, err := s.q.RefundClaimUnsettled(ctx, dbsqlc.RefundClaimUnsettledParams{SettleBefore: w.SettleBefore,
		GiveUpBefore: w.GiveUpBefore, PolledBefore: &w.PolledBefore, MaxRows: int32(w.Max)})
	if err != nil {
		return nil, pg.Interpret(err, "claim unsettled refunds")
	}
	return ids, nil
}
