// Package webhook receives webhooks: it verifies each one over its raw body,
// records a deduplicated receipt in one short transaction and answers at
// once. Applying a receipt happens later, in the apply worker.
package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"golang.org/x/time/rate"

	"github.com/onceflow/onceflow/pkg/webhooksig"
	"github.com/onceflow/onceflow/services/ingest/internal/psp/dlocal"
)

// Kind says what a source's events are and how the worker applies them.
type Kind string

// The kinds of source.
const (
	KindPSP            Kind = "psp"             // payments and refunds, re-fetched from the PSP
	KindFiscalProvider Kind = "fiscal_provider" // document news, forwarded to the invoicer
	KindGeneric        Kind = "generic"         // verified and kept, nothing applied
)

// Receipt is what a verified webhook is recorded as.
type Receipt struct {
	DedupeKey string // unique per scope: the event, never the delivery
	EventID   string
	EventType string // "payment" or "refund" for a PSP, the sender's type otherwise
}

// Identifier reads a verified delivery's identity; an error means 400.
type Identifier func(h http.Header, body []byte) (Receipt, error)

// Source is one configured sender, served at POST /webhooks/{Name}.
type Source struct {
	Name string
	Kind Kind
	PSP  string // the PSP of a psp source: its adapter's name
	// ChargebackCreditNote credits an invoiced payment's chargeback
	// automatically instead of opening a case (psp sources).
	ChargebackCreditNote bool
	Scope                string // sources sharing a scope share dedupe keys
	MaxBytes             int64
	Verifier             webhooksig.Verifier
	Identify             Identifier
	Limiter              *rate.Limiter // deliveries per second; nil for no limit
}

// maxIDLength bounds event ids; longer ones are refused, not truncated, so
// two events never share a key.
const maxIDLength = 255

// maxStatusLength bounds a dLocal status, part of the dedupe key: the
// unique index refuses keys over about 2700 bytes (a 500, retried forever).
const maxStatusLength = 32

// DLocalIdentifier keys a dLocal notification on the object id and its
// status, since dLocal sends no event id: a retried notification is a
// duplicate, a new status is a new receipt. A body with payment_id is a
// refund object; one with subscription_id is a subscription's execution, a
// payment keyed on its execution id and normalized status.
func DLocalIdentifier(_ http.Header, body []byte) (Receipt, error) {
	var obj struct {
		ID             string          `json:"id"`
		Status         string          `json:"status"`
		PaymentID      string          `json:"payment_id"`
		SubscriptionID json.RawMessage `json:"subscription_id"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		return Receipt{}, errors.New("body is not a JSON object")
	}
	if obj.ID == "" || obj.Status == "" || len(obj.ID) > maxIDLength || len(obj.Status) > maxStatusLength {
		return Receipt{}, errors.New("body lacks id or status (or one is too long)")
	}
	if !storable(obj.ID) || !storable(obj.Status) {
		return Receipt{}, errors.New("id or status holds a NUL character")
	}
	if len(obj.SubscriptionID) > 0 && string(obj.SubscriptionID) != "null" {
		return executionReceipt(obj.SubscriptionID, obj.ID, obj.Status)
	}
	kind := "payment"
	if obj.PaymentID != "" {
		kind = "refund"
	}
	return Receipt{DedupeKey: StatusKey(kind, obj.ID, obj.Status), EventID: obj.ID, EventType: kind}, nil
}

// executionReceipt is the receipt of execution id of subscription sub (a
// JSON number or string): a payment under the id the dLocal adapter
// fetches it by, keyed as the poller would key what it finds.
func executionReceipt(sub json.RawMessage, id, status string) (Receipt, error) {
	text := strings.Trim(string(sub), `"`)
	pid, ok := dlocal.ExecutionPaymentID(text, id)
	if !ok || strings.IndexFunc(text, func(r rune) bool { return r < '0' || r > '9' }) >= 0 || len(pid) > maxIDLength || !storable(pid) {
		return Receipt{}, errors.New("subscription_id: want the number of the execution's subscription")
	}
	return Receipt{DedupeKey: StatusKey("payment", pid, dlocal.ExecutionStatus(status)), EventID: pid, EventType: "payment"}, nil
}

// StatusKey is the dedupe key of a PSP object (kind "payment" or
// "refund") in a status: dLocal's notifications are keyed so, and the
// status poller records what it finds of any PSP under the same key, so a
// dLocal webhook arriving later is a duplicate.
func StatusKey(kind, id, status string) string {
	return kind + ":" + id + ":" + strings.ToUpper(status)
}

// EventIdentifier keys a delivery on its event id, read from the body field
// or the header called name (from is "body" or "header"). The event type is
// the body's "type". A fiscal provider's body must also carry the
// document's reference and status, in data.reference and data.status.
// The fields are read without decoding the whole body (gjson: a quarter of
// the time of a decode into a map); of a field named twice, the first
// counts.
func EventIdentifier(from, name string, kind Kind) Identifier {
	idPath := gjson.Escape(name)
	return func(h http.Header, body []byte) (Receipt, error) {
		if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
			return Receipt{}, errors.New("body is not a JSON object")
		}
		fields := gjson.GetManyBytes(body, idPath, "type")
		id := h.Get(name)
		if from == "body" {
			id = stringValue(fields[0])
		}
		if id == "" || len(id) > maxIDLength || !storable(id) {
			return Receipt{}, fmt.Errorf("want an event id of 1 to %d bytes of UTF-8 text without NUL in %s %s", maxIDLength, from, name)
		}
		if kind == KindFiscalProvider {
			if _, err := ParseProviderEvent(body); err != nil {
				return Receipt{}, err
			}
		}
		typ := stringValue(fields[1])
		if !storable(typ) {
			return Receipt{}, errors.New("type: want UTF-8 text without NUL")
		}
		return Receipt{DedupeKey: "event:" + id, EventID: id, EventType: clip(typ, maxTypeLength)}, nil
	}
}

// stringValue is r's text when r is a JSON string, and "" otherwise.
func stringValue(r gjson.Result) string {
	if r.Type != gjson.String {
		return ""
	}
	return r.Str
}

// maxTypeLength bounds the stored event type, in bytes; a longer type is
// kept cut (it only labels the receipt).
const maxTypeLength = 100

// clip cuts s to at most n bytes on a character boundary, so the result is
// valid UTF-8 whenever s is.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// storable reports whether PostgreSQL's text accepts s: valid UTF-8 and no
// NUL character (JSON can carry one as \u0000).
func storable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
