// Package cases holds what the services share about cases (docs/cases.md):
// the kinds and the actions that close them, a case's id outside its
// schema, the JSON a case is shown as, and the open-cases collector.
package cases

import (
	"slices"
	"strconv"
	"strings"
)

// The kinds of case (docs/cases.md#kinds-and-the-actions-that-close-them).
const (
	UnmatchedPayment = "unmatched_payment" // ingest
	RefusedRefund    = "refused_refund"    // ingest
	ParkedReceipt    = "parked_receipt"    // ingest
	Chargeback       = "chargeback"        // ingest
	DocumentRejected = "document_rejected" // invoicer
	DocumentRefused  = "document_refused"  // invoicer
	NeedsAttention   = "needs_attention"   // invoicer
	// ExchangeRateMissing: a foreign-currency document has no exchange
	// rate for its date (invoicer).
	ExchangeRateMissing = "exchange_rate_missing"
	ParkedOutboxRow     = "parked_outbox_row"  // the relay's, kept in its producers' schemas
	AuditDisagreement   = "audit_disagreement" // reconciler
	MissingDocument     = "missing_document"   // reconciler
)

// The actions that close a case.
const (
	ActionReapply       = "reapply"
	ActionAcceptAsSale  = "accept_as_sale"
	ActionSeparateSale  = "separate_sale"
	ActionRefundedAtPSP = "refunded_at_psp"
	ActionAcknowledge   = "acknowledge"
	ActionReplay        = "replay"
	ActionReissue       = "reissue"
	ActionRetry         = "retry"
	ActionVoid          = "void"
	ActionAdopt         = "adopt"
	ActionUnpark        = "unpark"
)

// actions is the table of docs/cases.md: the actions that close each kind.
var actions = map[string][]string{
	UnmatchedPayment:    {ActionReapply, ActionAcceptAsSale, ActionSeparateSale, ActionRefundedAtPSP},
	RefusedRefund:       {ActionReapply, ActionRefundedAtPSP, ActionAcknowledge},
	ParkedReceipt:       {ActionReplay, ActionAcknowledge},
	Chargeback:          {ActionAcknowledge},
	DocumentRejected:    {ActionReissue},
	DocumentRefused:     {ActionRetry, ActionReissue, ActionVoid},
	NeedsAttention:      {ActionAdopt, ActionRetry, ActionVoid},
	ExchangeRateMissing: {ActionRetry, ActionVoid},
	ParkedOutboxRow:     {ActionUnpark},
	AuditDisagreement:   {ActionAcknowledge},
	MissingDocument:     {ActionAcknowledge},
}

// Actions returns the actions that close a case of kind, a fresh slice;
// empty (not nil) for a kind the table does not know.
func Actions(kind string) []string {
	return append([]string{}, actions[kind]...)
}

// Closes reports whether action closes a case of kind.
func Closes(kind, action string) bool {
	return slices.Contains(actions[kind], action)
}

// Owners are the services that keep cases, in the order the reconciler
// lists them.
var Owners = []string{"ingest", "invoicer", "reconciler"}

// ID is case n's id outside its service's schema: "<service>-<n>".
func ID(service string, n int64) string {
	return service + "-" + strconv.FormatInt(n, 10)
}

// ParseID splits "<service>-<n>" (n ≥ 1, service one of Owners).
func ParseID(id string) (service string, n int64, ok bool) {
	service, num, found := strings.Cut(id, "-")
	n, err := strconv.ParseInt(num, 10, 64)
	if !found || err != nil || n < 1 || !slices.Contains(Owners, service) {
		return "", 0, false
	}
	return service, n, true
}

// ParseOwnID reads the number of one of service's cases, given as
// "<service>-<n>" or "<n>" (n ≥ 1).
func ParseOwnID(service, id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, service+"-"), 10, 64)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}
