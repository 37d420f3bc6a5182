// Package apply turns pending webhook receipts into state: it re-fetches the
// payment or refund from the receipt's PSP adapter, validates it against the
// order, and in one transaction moves the state forward, inserts the outbox
// row and marks the receipt done. The receipts a worker claims together
// share that transaction. It knows the normalized statuses of package psp,
// never a PSP's own.
package apply

import "github.com/onceflow/onceflow/services/ingest/internal/psp"

// Payment and refund statuses that matter to billing.
const (
	StatusPaid       = psp.StatusPaid
	StatusSuccess    = psp.StatusSuccess
	StatusChargeback = psp.StatusChargeback
)

// paymentRank orders the normalized payment statuses; a status only
// replaces a lower-ranked one, so a late PENDING never undoes PAID. Unknown
// statuses rank 0 and are never invoiced.
//
// PAID outranks every other status but a chargeback, the other final ones
// included: money taken must be invoiced, so a PAID the PSP reports after
// EXPIRED (or REJECTED, CANCELLED) moves the payment to PAID, and only a
// chargeback moves it on. Since only PAID emits the invoice event and a
// PAID always ends stored as PAID or CHARGEBACK (with its paid_at kept),
// no apply emits the event and leaves the payment unpaid, and none makes
// it PAID without the event. A CHARGEBACK emits nothing: it opens a case.
var paymentRank = map[string]int32{
	psp.StatusPending: 10, psp.StatusAuthorized: 20, psp.StatusVerified: 20,
	psp.StatusRejected: 30, psp.StatusCancelled: 30, psp.StatusExpired: 30,
	StatusPaid: 40, StatusChargeback: 50,
}

// refundRank orders refund statuses the same way: SUCCESS, the one that
// emits the credit-note event, outranks every other.
var refundRank = map[string]int32{psp.StatusPending: 10, psp.StatusRejected: 30, psp.StatusCancelled: 30, StatusSuccess: 40}
