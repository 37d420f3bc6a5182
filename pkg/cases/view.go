package cases

import (
	"encoding/json"
	"time"
)

// View is a case as the API shows it (docs/cases.md). Empty money fields
// are left out; a closed case adds closed_at, closed_by, action and
// reason. Times are strings so each service keeps its rendering (Stamp for
// ingest's and the invoicer's) and a client reads them as sent.
type View struct {
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
	ReceiptID    *int64          `json:"receipt_id,omitempty"`  // ingest
	DocumentID   *int64          `json:"document_id,omitempty"` // invoicer
	Evidence     json.RawMessage `json:"evidence"`
	OpenedAt     string          `json:"opened_at"`
	UpdatedAt    string          `json:"updated_at"`
	ClosedAt     string          `json:"closed_at,omitempty"`
	ClosedBy     string          `json:"closed_by,omitempty"`
	Action       string          `json:"action,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	Actions      []string        `json:"actions"`
}

// Stamp renders t as encoding/json renders a time.Time (RFC 3339 with
// the fraction it has, in t's zone); "" for nil.
func Stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// Evidence renders an evidence map as encoding/json would (keys sorted);
// nil is {}. The map comes from a jsonb column, so it always renders; a
// value that does not renders as {}.
func Evidence(ev map[string]any) json.RawMessage {
	b, err := json.Marshal(ev)
	if err != nil || ev == nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// Deref is *s, or "" for nil.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
