package admin

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// KindParkedOutboxRow is the relay's case: an outbox row it parked, kept in
// the producer's schema and closed by unparking it.
const KindParkedOutboxRow = "parked_outbox_row"

// actions are the operator actions that close each kind (docs/cases.md).
var actions = map[string][]string{
	"unmatched_payment":  {"reapply", "accept_as_sale", "separate_sale", "refunded_at_psp"},
	"refused_refund":     {"reapply", "refunded_at_psp", "acknowledge"},
	"parked_receipt":     {"replay", "acknowledge"},
	"chargeback":         {"acknowledge"},
	"document_rejected":  {"reissue"},
	"document_refused":   {"retry", "reissue", "void"},
	"needs_attention":    {"adopt", "retry", "void"},
	KindParkedOutboxRow:  {"unpark"},
	"audit_disagreement": {"acknowledge"},
	"missing_document":   {"acknowledge"},
}

// Actions returns the actions that close a case of kind; none for a kind
// this table does not know.
func Actions(kind string) []string {
	if a, ok := actions[kind]; ok {
		return a
	}
	return []string{}
}

// CaseJSON is a case as docs/cases.md shows it.
type CaseJSON struct {
	ID           string          `json:"id"`
	Service      string          `json:"service"`
	Kind         string          `json:"kind"`
	Subject      string          `json:"subject"`
	PSP          string          `json:"psp,omitempty"`
	PSPPaymentID string          `json:"psp_payment_id,omitempty"`
	PSPRefundID  string          `json:"psp_refund_id,omitempty"`
	OrderID      string          `json:"order_id,omitempty"`
	AmountMinor  *int64          `json:"amount_minor,omitempty"`
	Currency     string          `json:"currency,omitempty"`
	Evidence     json.RawMessage `json:"evidence"`
	OpenedAt     string          `json:"opened_at"`
	UpdatedAt    string          `json:"updated_at"`
	ClosedAt     string          `json:"closed_at,omitempty"`
	ClosedBy     string          `json:"closed_by,omitempty"`
	Action       string          `json:"action,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	Actions      []string        `json:"actions"`
}

func caseJSON(c store.Case) CaseJSON {
	out := CaseJSON{ID: c.Service + "-" + strconv.FormatInt(c.ID, 10), Service: c.Service, Kind: c.Kind,
		Subject: c.Subject, PSP: c.PSP, PSPPaymentID: c.PSPPaymentID, PSPRefundID: c.PSPRefundID,
		OrderID: c.OrderID, AmountMinor: c.AmountMinor, Currency: c.Currency, Evidence: c.Evidence,
		OpenedAt: stamp(c.OpenedAt), UpdatedAt: stamp(c.UpdatedAt),
		ClosedBy: c.ClosedBy, Action: c.Action, Reason: c.Reason, Actions: []string{}}
	if c.ClosedAt != nil {
		out.ClosedAt = stamp(*c.ClosedAt)
	} else {
		out.Actions = Actions(c.Kind)
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
