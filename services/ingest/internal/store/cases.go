package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// Case is a situation a person must decide: the money it concerns, the
// evidence, and, once closed, who closed it, how and why.
type Case struct {
	ID           int64
	Kind         string
	Subject      string // payment:<id>, refund:<id>, receipt:<id>, outbox:<id>
	PSP          string
	PSPPaymentID string
	PSPRefundID  string
	OrderID      string // the merchant order id
	AmountMinor  *int64
	Currency     string
	ReceiptID    *int64
	Evidence     map[string]any // never personal data
	OpenedAt     time.Time
	UpdatedAt    time.Time
	ClosedAt     *time.Time
	ClosedBy     string
	Action       string
	Reason       string
}

// Open reports whether c is still open.
func (c Case) Open() bool { return c.ClosedAt == nil }

// CaseClosing is an operator's closing record.
type CaseClosing struct {
	Actor       string
	Action      string
	Reason      string
	PSPRefundID string // only for refunded_at_psp
}

// OpenCase opens c in tx, or touches the open case of the same kind and
// subject, and returns its id.
func (t *Tx) OpenCase(ctx context.Context, c Case) (int64, error) {
	ev, err := json.Marshal(c.Evidence)
	if err != nil {
		return 0, fmt.Errorf("case evidence: %w", err)
	}
	if c.Evidence == nil {
		ev = []byte("{}")
	}
	id, err := t.q.CaseOpen(ctx, dbsqlc.CaseOpenParams{
		Kind: c.Kind, Subject: c.Subject, Psp: c.PSP, PspPaymentID: c.PSPPaymentID, PspRefundID: c.PSPRefundID,
		OrderID: c.OrderID, AmountMinor: c.AmountMinor, Currency: c.Currency, ReceiptID: c.ReceiptID, Evidence: ev,
	})
	return id, pg.Interpret(err, "open case %s %s", c.Kind, c.Subject)
}

// Case returns case id, or an error of kind NotFound.
func (s *Store) Case(ctx context.Context, id int64) (Case, error) {
	row, err := s.q.CaseGet(ctx, id)
	if err != nil {
		return Case{}, pg.Interpret(err, "case %d", id)
	}
	return caseFromRow(row), nil
}

// LockCase returns case id locked until tx ends, or an error of kind
// NotFound.
func (t *Tx) LockCase(ctx context.Context, id int64) (Case, error) {
	row, err := t.q.CaseLock(ctx, id)
	if err != nil {
		return Case{}, pg.Interpret(err, "case %d", id)
	}
	return caseFromRow(row), nil
}

// OpenCasesOfReceipt returns the open cases that name receipt id.
func (s *Store) OpenCasesOfReceipt(ctx context.Context, id int64) ([]Case, error) {
	rows, err := s.q.CaseOpenOfReceipt(ctx, &id)
	if err != nil {
		return nil, pg.Interpret(err, "open cases of receipt %d", id)
	}
	out := make([]Case, len(rows))
	for i, r := range rows {
		out[i] = caseFromRow(r)
	}
	return out, nil
}

// Cases returns up to max cases, newest first, by status (open, closed or
// all) and kind ("" for every kind).
func (s *Store) Cases(ctx context.Context, status, kind string, max int) ([]Case, error) {
	rows, err := s.q.CaseList(ctx, status, kind, int32(max))
	if err != nil {
		return nil, pg.Interpret(err, "list cases")
	}
	out := make([]Case, len(rows))
	for i, r := range rows {
		out[i] = caseFromRow(r)
	}
	return out, nil
}

// CloseCase closes open case id in tx with cl. A case closed already (or
// absent) is an error of kind NotFound.
func (t *Tx) CloseCase(ctx context.Context, id int64, cl CaseClosing) (Case, error) {
	row, err := t.q.CaseClose(ctx, dbsqlc.CaseCloseParams{ID: id, ClosedBy: &cl.Actor, Action: &cl.Action,
		Reason: &cl.Reason, PspRefundID: cl.PSPRefundID})
	if err != nil {
		return Case{}, pg.Interpret(err, "close case %d", id)
	}
	return caseFromRow(row), nil
}

// OpenCaseStats returns the open cases per kind, ages by the database's
// clock.
func (s *Store) OpenCaseStats(ctx context.Context) ([]cases.Stat, error) {
	rows, err := s.q.CaseOpenStats(ctx)
	if err != nil {
		return nil, pg.Interpret(err, "open case stats")
	}
	out := make([]cases.Stat, len(rows))
	for i, r := range rows {
		out[i] = cases.Stat{Kind: r.Kind, Open: r.Open, OldestAge: time.Duration(r.OldestAgeSeconds * float64(time.Second))}
	}
	return out, nil
}

// FinishReceipt ends receipt id, claimed under token, as status in tx (the
// transaction that opens its case).
func (t *Tx) FinishReceipt(ctx context.Context, id int64, token uuid.UUID, status string, reason *string) error {
	_, err := t.q.ReceiptFinish(ctx, dbsqlc.ReceiptFinishParams{ID: id, LeaseToken: &token, Status: status, LastError: reason})
	return pg.Interpret(err, "finish receipt %d", id)
}

// RetryReceiptLater is Store.RetryReceiptLater in tx, so a receipt parked
// and its case commit together.
func (t *Tx) RetryReceiptLater(ctx context.Context, id int64, token uuid.UUID, cause string, next time.Time, park bool) error {
	_, err := t.q.ReceiptRetryLater(ctx, dbsqlc.ReceiptRetryLaterParams{
		ID: id, LeaseToken: &token, LastError: &cause, Park: park, NextAttemptAt: next,
	})
	return pg.Interpret(err, "retry receipt %d later", id)
}

// RequeueReceipt sends receipt id back to the apply worker in tx, whatever
// it ended as, with its attempts reset. An unknown receipt (pruned) is an
// error of kind NotFound.
func (t *Tx) RequeueReceipt(ctx context.Context, id int64) error {
	_, err := t.q.ReceiptRequeue(ctx, id)
	return pg.Interpret(err, "requeue receipt %d", id)
}

// PaidCheck names a PAID payment to check against the other PAID payments
// of its order.
type PaidCheck struct {
	OrderID   uuid.UUID
	PaymentID string
}

// LockOrdersPaid locks the checks' orders until tx ends, so two payments of
// one order are checked one after the other, and then returns their PAID
// payments, earliest first, with those of the checks' payments recorded
// PAID themselves. The two are separate statements: the second sees a
// payment another transaction recorded before it let go of the lock.
func (t *Tx) LockOrdersPaid(ctx context.Context, checks []PaidCheck) ([]Payment, error) {
	orders, payments := make([]uuid.UUID, len(checks)), make([]string, len(checks))
	for i, c := range checks {
		orders[i], payments[i] = c.OrderID, c.PaymentID
	}
	if _, err := t.q.OrdersLockForPayments(ctx, orders); err != nil {
		return nil, pg.Interpret(err, "lock %d orders", len(orders))
	}
	rows, err := t.q.PaymentPaidOfOrders(ctx, orders, payments)
	if err != nil {
		return nil, pg.Interpret(err, "paid payments of %d orders", len(orders))
	}
	out := make([]Payment, len(rows))
	for i, r := range rows {
		out[i] = Payment{ID: r.ID, OrderID: r.OrderID, Status: "PAID", AmountMinor: r.AmountMinor, Currency: r.Currency}
	}
	return out, nil
}

func caseFromRow(r dbsqlc.IngestCase) Case {
	c := Case{ID: r.ID, Kind: r.Kind, Subject: r.Subject, PSP: r.Psp, PSPPaymentID: r.PspPaymentID,
		PSPRefundID: r.PspRefundID, OrderID: r.OrderID, AmountMinor: r.AmountMinor, Currency: r.Currency,
		ReceiptID: r.ReceiptID, OpenedAt: r.OpenedAt, UpdatedAt: r.UpdatedAt, ClosedAt: r.ClosedAt}
	_ = json.Unmarshal(r.Evidence, &c.Evidence)
	c.ClosedBy, c.Action, c.Reason = deref(r.ClosedBy), deref(r.Action), deref(r.Reason)
	return c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
