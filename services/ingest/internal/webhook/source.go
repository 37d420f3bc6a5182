// Package webhook receives webhooks: it verifies each one over its raw body,
// records a deduplicated receipt in one short transaction and answers at
// once. Applying a receipt happens later, in the apply worker.
package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/onceflow/onceflow/pkg/dlocal"
)

// Receipt is what a verified webhook is recorded as.
type Receipt struct {
	DedupeKey string // unique per source: the event, never the delivery
	EventID   string
	EventType string // "payment" or "refund" for a PSP
}

// Source verifies and identifies the webhooks of one sender.
type Source interface {
	// Verify checks the signature over the raw body; an error means 401.
	Verify(h http.Header, body []byte) error
	// Identify reads the dedupe key from a verified body; an error means 400.
	Identify(body []byte) (Receipt, error)
}

// DLocal is a dLocal notification source: V2-HMAC-SHA256 over the merchant's
// own login, the X-Date header and the body, keyed with the secret key.
type DLocal struct {
	Login     string
	SecretKey string
}

// Verify implements Source.
func (d DLocal) Verify(h http.Header, body []byte) error {
	if h.Get(dlocal.HeaderDate) == "" {
		return errors.New("missing X-Date header")
	}
	return dlocal.Verify(d.SecretKey, d.Login, h.Get(dlocal.HeaderDate), body, h.Get(dlocal.HeaderAuthorization))
}

// Identify implements Source. dLocal notifications carry no event id, so a
// delivery is keyed on the object id and its status: a retried notification
// is a duplicate, a new status is a new receipt. A body with payment_id is a
// refund object.
func (DLocal) Identify(body []byte) (Receipt, error) {
	var obj struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		PaymentID string `json:"payment_id"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		return Receipt{}, errors.New("body is not a JSON object")
	}
	if obj.ID == "" || obj.Status == "" {
		return Receipt{}, errors.New("body lacks id or status")
	}
	kind := "payment"
	if obj.PaymentID != "" {
		kind = "refund"
	}
	return Receipt{DedupeKey: fmt.Sprintf("%s:%s:%s", kind, obj.ID, obj.Status), EventID: obj.ID, EventType: kind}, nil
}
