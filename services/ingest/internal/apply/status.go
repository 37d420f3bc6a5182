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
var paymentRank = map[string]int32{
	"PENDING": 10, "AUTHORIZED": 20, "VERIFIED": 20,
	"PAID": 30, "REJECTED": 30, "CANCELLED": 30, "EXPIRED": 30,
}

// refundRank orders dLocal refund statuses the same way.
var refundRank = map[string]int32{"PENDING": 10, "SUCCESS": 30, "REJECTED": 30, "CANCELLED": 30}
