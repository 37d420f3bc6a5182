// Package apply turns pending webhook receipts into state: it re-fetches the
// payment or refund from the PSP, validates it against the order, and in one
// transaction moves the state forward, inserts the outbox row and marks the
// receipt done. The receipts a worker claims together share that
// transaction.
package apply

// Payment and refund statuses that matter to billing.
const (
	StatusPaid    = "PAID"
	StatusSuccess = "SUCCESS"
)

// paymentRank orders dLocal payment statuses; a status only replaces a
// lower-ranked one, so a late PENDING never undoes PAID. Unknown statuses
// rank 0 and are never invoiced.
//
// PAID outranks every other status, the other final ones included: money
// taken must be invoiced, so a PAID the PSP reports after EXPIRED (or
// REJECTED, CANCELLED) moves the payment to PAID, and nothing moves it
// away. Since only PAID emits the invoice event and a PAID always ends
// stored as PAID, the stored status and the event always agree: no apply
// emits the event and leaves the payment unpaid, and none makes it PAID
// without the event.
var paymentRank = map[string]int32{
	"PENDING": 10, "AUTHORIZED": 20, "VERIFIED": 20,
	"REJECTED": 30, "CANCELLED": 30, "EXPIRED": 30,
	StatusPaid: 40,
}

// refundRank orders dLocal refund statuses the same way: SUCCESS, the one
// that emits the credit-note event, outranks every other.
var refundRank = map[string]int32{"PENDING": 10, "REJECTED": 30, "CANCELLED": 30, StatusSuccess: 40}
