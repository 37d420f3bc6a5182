// Package notices is how ingest learns what became of its payments' fiscal
// documents: it consumes the invoicer's notification events from the
// notifications queue (ingest is that queue's one consumer), records each
// document in ingest's own documents table (shown on GET /v1/orders/{id})
// and, when a merchant webhook is configured, queues the event's delivery to
// the merchant in the same transaction. Ingest never reads the invoicer's
// tables. A message is deleted only after that commit, so a redelivered
// event changes nothing; one that cannot be read stays in the queue until
// the redrive policy moves it to the dead-letter queue.
package notices

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// TypeDocumentAuthorized is the one event type merchants are sent: a
// document that became valid (authorized by DGI, or issued under the
// daily-summary rule). Rejections and documents needing attention are
// operators' matters (cases); they are recorded and shown on the order, but
// not sent, since a re-issued document follows with its own event.
const TypeDocumentAuthorized = "document.authorized"

// errUnreadable marks a message that can never be handled.
var errUnreadable = errors.New("unreadable notification")

var kinds = map[eventsv1.DocumentKind]string{
	eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE:     "invoice",
	eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE: "credit_note",
}

// document reads ev as the document it announces; an event missing what
// identifies the document is errUnreadable.
func document(ev *eventsv1.NotificationEvent) (store.Document, error) {
	kind, ok := kinds[ev.GetKind()]
	if !ok && ev.GetSourceKind() == "payment" {
		kind, ok = "invoice", true // announced before events named the kind
	}
	if !ok || ev.GetReference() == "" || ev.GetEventKey() == "" || ev.GetStatus() == "" ||
		(ev.GetSourceKind() != "payment" && ev.GetSourceKind() != "refund") {
		return store.Document{}, fmt.Errorf("%w: want event_key, reference, source_kind, kind and status", errUnreadable)
	}
	d := store.Document{Reference: ev.GetReference(), SourceKind: ev.GetSourceKind(), SourceRef: ev.GetSourceRef(),
		PaymentRef: ev.GetPaymentRef(), Kind: kind, Revision: ev.GetRevision(), Status: ev.GetStatus(), CFEType: ev.GetCfeType(),
		Series: ev.GetSeries(), Number: ev.GetNumber(), CAEID: ev.GetCaeId(), CAEFrom: ev.GetCaeRangeFrom(), CAETo: ev.GetCaeRangeTo(),
		SecurityCode: ev.GetSecurityCode(), VerifyURL: ev.GetVerifyUrl(), AmountMinor: ev.GetAmountMinor(),
		Currency: ev.GetCurrency(), Reason: ev.GetReason(), EventKey: ev.GetEventKey(), OccurredAt: ev.GetOccurredAt().AsTime()}
	if d.PaymentRef == "" && d.SourceKind == "payment" {
		d.PaymentRef = d.SourceRef
	}
	var err error
	if d.CAEExpires, err = date("cae_expires", ev.GetCaeExpires()); err != nil {
		return store.Document{}, err
	}
	if d.IssueDate, err = date("issue_date", ev.GetIssueDate()); err != nil {
		return store.Document{}, err
	}
	return d, nil
}

// date parses an optional YYYY-MM-DD field.
func date(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q is not a YYYY-MM-DD date", errUnreadable, name, v)
	}
	return &t, nil
}

// Payload is the JSON body POSTed to the merchant, in the shape Standard
// Webhooks suggests (type, timestamp, data); docs/notifications.md
// describes each field. It carries no buyer data.
type Payload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is what a notification is about: the order and its document.
type Data struct {
	EventID         string       `json:"event_id"`
	OrderID         string       `json:"order_id,omitempty"`
	MerchantOrderID string       `json:"merchant_order_id,omitempty"`
	Document        DocumentView `json:"document"`
}

// DocumentView is a fiscal document as the merchant and the order API see
// it: its status and the buyer-facing result.
type DocumentView struct {
	Kind         string   `json:"kind"`
	Status       string   `json:"status"`
	Reference    string   `json:"reference"`
	SourceKind   string   `json:"source_kind"`
	SourceRef    string   `json:"source_ref"`
	CFEType      int32    `json:"cfe_type"`
	Series       string   `json:"series,omitempty"`
	Number       int64    `json:"number,omitempty"`
	CAE          *CAEView `json:"cae,omitempty"`
	SecurityCode string   `json:"security_code,omitempty"`
	VerifyURL    string   `json:"verify_url,omitempty"`
	IssueDate    string   `json:"issue_date,omitempty"`
	AmountMinor  int64    `json:"amount_minor"`
	Currency     string   `json:"currency"`
	Revision     int32    `json:"revision,omitempty"`
	Reason       string   `json:"reason,omitempty"`
}

// CAEView is the provider's CAE a document was numbered under: DGI's
// authorization of a number range, with its expiry date.
type CAEView struct {
	ID        string `json:"id"`
	RangeFrom int64  `json:"range_from,omitempty"`
	RangeTo   int64  `json:"range_to,omitempty"`
	Expires   string `json:"expires,omitempty"`
}

// View is d as the merchant and the order API see it.
func View(d store.Document) DocumentView {
	v := DocumentView{Kind: d.Kind, Status: d.Status, Reference: d.Reference, SourceKind: d.SourceKind, SourceRef: d.SourceRef,
		CFEType: d.CFEType, Series: d.Series, Number: d.Number, SecurityCode: d.SecurityCode, VerifyURL: d.VerifyURL,
		IssueDate: day(d.IssueDate), AmountMinor: d.AmountMinor, Currency: d.Currency, Revision: d.Revision, Reason: d.Reason}
	if d.CAEID != "" {
		v.CAE = &CAEView{ID: d.CAEID, RangeFrom: d.CAEFrom, RangeTo: d.CAETo, Expires: day(d.CAEExpires)}
	}
	return v
}

func day(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.DateOnly)
}

// payload is the body announcing d of order (zero when unknown) to the
// merchant.
func payload(d store.Document, order store.OrderRef, now time.Time) ([]byte, error) {
	p := Payload{Type: TypeDocumentAuthorized, Timestamp: now.UTC().Truncate(time.Second),
		Data: Data{EventID: d.EventKey, MerchantOrderID: order.MerchantOrderID, Document: View(d)}}
	if order.MerchantOrderID != "" {
		p.Data.OrderID = order.ID.String()
	}
	return json.Marshal(p)
}
