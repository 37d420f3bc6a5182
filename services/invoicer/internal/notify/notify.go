// Package notify announces a document's outcome (authorized, rejected,
// needs attention) through the invoicer's outbox, inside the transaction
// that changes the document's status, so the announcement exists exactly
// when the change does. The relay ships the rows ("notification.document")
// to the notifications queue.
package notify

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Table is the invoicer's outbox.
var Table = outbox.Table{Schema: "invoicer", Name: "outbox"}

// Change is a document's new state, to announce if it is news.
type Change struct {
	Status fiscal.Status
	Series string
	Number int64
	Reason string // why it needs attention or was rejected; no buyer data
	// Provider is the provider's copy as recorded with the change (its CAE,
	// security code, verification link and issue date); see Recorded.
	Provider fiscal.Held
}

// Recorded is the provider's copy of d as its row holds it: what a change
// that learnt nothing new about the provider's copy announces.
func Recorded(d store.Document) fiscal.Held {
	h := fiscal.Held{CAEID: deref(d.ProviderCAE), SecurityCode: deref(d.ProviderSecurityCode), VerifyURL: deref(d.ProviderURL),
		CAEFrom: deref(d.ProviderCAEFrom), CAETo: deref(d.ProviderCAETo), Series: deref(d.ProviderSeries), Number: deref(d.ProviderNumber)}
	if d.ProviderCAEExpires != nil {
		h.CAEExpires = *d.ProviderCAEExpires
	}
	if d.IssueDate != nil {
		h.IssueDate = *d.IssueDate
	}
	return h
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// date renders t as YYYY-MM-DD, or "" when it is zero.
func date(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.DateOnly)
}

// documentKinds maps a document's kind to the event's.
var documentKinds = map[fiscal.Kind]eventsv1.DocumentKind{
	fiscal.KindInvoice:    eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE,
	fiscal.KindCreditNote: eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE,
}

// kinds maps the states worth announcing to their notification type. An
// issued document (daily-summary rule) is announced as authorized.
var kinds = map[fiscal.Status]eventsv1.NotificationType{
	fiscal.StatusAuthorized:     eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED,
	fiscal.StatusIssued:         eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED,
	fiscal.StatusObserved:       eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED, // valid for the buyer, with remarks
	fiscal.StatusRejected:       eventsv1.NotificationType_NOTIFICATION_TYPE_REJECTED,
	fiscal.StatusNeedsAttention: eventsv1.NotificationType_NOTIFICATION_TYPE_NEEDS_ATTENTION,
}

// Insert adds the notification for d reaching c, inside tx, when c.Status
// is announced at all (see Message).
func Insert(ctx context.Context, tx *store.Tx, d store.Document, c Change) error {
	m, ok, err := Message(d, c)
	if !ok || err != nil {
		return err
	}
	if _, err := tx.InsertOutbox(ctx, Table, []outbox.Message{m}); err != nil {
		return fmt.Errorf("notify %s: %w", m.EventKey, err)
	}
	return nil
}

// Message is the outbox message announcing d reaching c; ok is false when
// c.Status is not announced. The event key names the document, the
// notification type and, for needs_attention (which can recur after an
// operator retry), the attempt count, so a replayed transition inserts
// nothing new.
func Message(d store.Document, c Change) (m outbox.Message, ok bool, err error) {
	typ, ok := kinds[c.Status]
	if !ok {
		return m, false, nil
	}
	key := fmt.Sprintf("document:%s:%s", d.Reference, c.Status)
	switch c.Status {
	case fiscal.StatusIssued:
		key = fmt.Sprintf("document:%s:%s", d.Reference, fiscal.StatusAuthorized)
		c.Reason = "issued: DGI only reports it in the daily summary"
	case fiscal.StatusObserved:
		key = fmt.Sprintf("document:%s:%s", d.Reference, fiscal.StatusAuthorized)
		c.Reason = "observed: DGI accepted it with remarks"
	}
	if c.Status == fiscal.StatusNeedsAttention {
		key = fmt.Sprintf("%s:%d", key, d.Attempts)
	}
	ev := &eventsv1.NotificationEvent{
		EventKey: key, Type: typ, SourceKind: d.SourceKind, SourceRef: d.SourceRef, Reference: d.Reference,
		CfeType: int32(d.CFEType), Series: c.Series, Number: c.Number, Reason: c.Reason,
		OccurredAt: timestamppb.New(time.Now()),
		Kind:       documentKinds[d.Kind], Status: string(c.Status), CaeId: c.Provider.CAEID,
		CaeRangeFrom: c.Provider.CAEFrom, CaeRangeTo: c.Provider.CAETo, CaeExpires: date(c.Provider.CAEExpires),
		SecurityCode: c.Provider.SecurityCode, VerifyUrl: c.Provider.VerifyURL, IssueDate: date(c.Provider.IssueDate),
		AmountMinor: d.AmountMinor, Currency: d.Currency, PaymentRef: d.SourceRef, Revision: d.Revision,
	}
	if d.OriginalSourceRef != nil {
		ev.PaymentRef = *d.OriginalSourceRef
	}
	payload, err := eventsv1.Marshal(ev)
	if err != nil {
		return m, false, err
	}
	return outbox.Message{EventKey: key, EventType: eventsv1.TypeNotificationDocument, Payload: payload}, true, nil
}

// Commit runs fn in a transaction of st and, once it has committed, calls
// wake (when set) so the relay publishes the notification fn inserted
// without waiting for its poll: the NOTIFY is sent after the commit, never
// inside it. fn's error is returned as it is.
func Commit(ctx context.Context, st *store.Store, wake func(), fn func(tx *store.Tx) error) error {
	if err := st.InTx(ctx, fn); err != nil {
		return err
	}
	if wake != nil {
		wake()
	}
	return nil
}
