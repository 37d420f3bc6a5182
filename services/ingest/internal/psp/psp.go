// Package psp is what ingest knows of a payment service provider, whichever
// it is: a payment, a refund, and the Adapter each PSP's package implements
// (one package per PSP, e.g. psp/dlocal). A webhook body is only a hint:
// the apply worker and the status poller ask the adapter for the
// authoritative object and act on its normalized form, so neither knows
// which PSP it talks to.
package psp

import (
	"context"
	"time"
)

// Normalized payment statuses. An adapter maps its PSP's statuses onto
// these; one it cannot map is passed through as it is and ranks nowhere
// (never invoiced).
const (
	StatusPending    = "PENDING"
	StatusAuthorized = "AUTHORIZED"
	StatusVerified   = "VERIFIED"
	StatusRejected   = "REJECTED"
	StatusCancelled  = "CANCELLED"
	StatusExpired    = "EXPIRED"
	StatusPaid       = "PAID"
	// StatusChargeback is a paid payment the card holder disputed and
	// the PSP took back.
	StatusChargeback = "CHARGEBACK"
)

// Normalized refund statuses (StatusPending, StatusRejected and
// StatusCancelled apply to refunds too).
const StatusSuccess = "SUCCESS"

// Payment is the authoritative state of a payment at the PSP.
type Payment struct {
	ID          string
	Status      string // normalized
	AmountMinor int64  // in the currency's minor units
	Currency    string // ISO 4217, upper case
	OrderID     string // the merchant's order id (our order reference)
	StatusCode  string // the PSP's own code or status, for the log
	Created     time.Time
	// Conversion, when the PSP charged in another currency than the one it
	// was asked for, is what it converted from; nil otherwise. AmountMinor
	// and Currency are always what was charged.
	Conversion *Conversion
	// Refunds are the refunds the PSP lists on the payment, for a PSP that
	// notifies a refund as a change of its payment (Mercado Pago); the
	// apply worker records each as a refund receipt.
	Refunds []Refund
}

// Conversion is the amount and currency a payment was asked for, when the
// PSP charged it in another currency.
type Conversion struct {
	AmountMinor int64
	Currency    string
}

// Refund is the authoritative state of a refund at the PSP.
type Refund struct {
	ID          string
	PaymentID   string
	Status      string // normalized
	AmountMinor int64
	Currency    string
	StatusCode  string
	Created     time.Time
}

// Adapter is one PSP's API as ingest uses it. Errors carry pkg/errkind
// kinds: NotFound for an object the PSP does not hold, Unavailable for a
// PSP that is down or answered something not to be trusted yet (retried).
type Adapter interface {
	// Name is the PSP's name in the sources file (dlocal, stripe, ...).
	Name() string
	// Payment re-fetches payment id.
	Payment(ctx context.Context, id string) (Payment, error)
	// Refund re-fetches refund id.
	Refund(ctx context.Context, id string) (Refund, error)
	// PaymentsOfOrder finds every payment the PSP holds for our order
	// reference, the poller's way to a payment whose webhook was lost.
	PaymentsOfOrder(ctx context.Context, orderRef string) ([]Payment, error)
	// PaymentsCreated lists the payments created in [from, to), the PSP
	// audit's view of the PSP's ledger.
	PaymentsCreated(ctx context.Context, from, to time.Time) ([]Payment, error)
	// RefundsCreated lists the refunds created in [from, to), the PSP
	// audit's view of the refunds.
	RefundsCreated(ctx context.Context, from, to time.Time) ([]Refund, error)
}

// Subscriptions is what ingest knows of one recurring order's
// subscriptions at a PSP (docs/psp.md, "Subscriptions"), for an adapter
// that lists their payments: the order's reference, the PSP plan the
// merchant named on it (empty when none) and the ids of the payments
// ingest recorded for it.
type Subscriptions struct {
	OrderRef string
	Plan     string
	Known    []string
}
