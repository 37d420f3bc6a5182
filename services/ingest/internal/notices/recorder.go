package notices

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Recorder records the documents notification events announce and queues
// their deliveries to the merchant.
type Recorder struct {
	store   *store.Store
	log     *zap.Logger
	deliver bool   // a merchant webhook is configured: queue deliveries
	wake    func() // tells the deliverer, after a commit, that a delivery was queued; may be nil
}

// NewRecorder returns a recorder over st; deliver says whether merchant
// deliveries are queued, wake (may be nil) is called after a commit that
// queued one.
func NewRecorder(st *store.Store, log *zap.Logger, deliver bool, wake func()) *Recorder {
	return &Recorder{store: st, log: log, deliver: deliver, wake: wake}
}

// Handle records the event in body; its outcome is a metric label
// (recorded, queued, unreadable, error). An error leaves the message in the
// queue: errUnreadable ones until the dead-letter queue takes them.
func (r *Recorder) Handle(ctx context.Context, body string) (outcome string, err error) {
	var ev eventsv1.NotificationEvent
	if err := eventsv1.Decode([]byte(body), &ev); err != nil {
		return "unreadable", fmt.Errorf("%w: %w", errUnreadable, err)
	}
	d, err := document(&ev)
	if err != nil {
		return "unreadable", err
	}
	send := r.deliver && ev.GetType() == eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED
	err = r.record(ctx, d, send)
	if err != nil {
		return "error", fmt.Errorf("record notification %s: %w", d.EventKey, err)
	}
	r.log.Info("document notification", zap.String("event_key", d.EventKey), zap.String("reference", d.Reference), zap.String("status", d.Status))
	if !send {
		return "recorded", nil
	}
	if r.wake != nil {
		r.wake()
	}
	return "queued", nil
}

// record writes d: alone, in one statement that commits by itself; with
// send, in one transaction with the merchant delivery it queues.
func (r *Recorder) record(ctx context.Context, d store.Document, send bool) error {
	if !send {
		return r.store.RecordDocument(ctx, d)
	}
	return r.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.RecordDocument(ctx, d); err != nil {
			return err
		}
		order, _, err := tx.OrderOfPayment(ctx, d.PaymentRef)
		if err != nil {
			return err
		}
		body, err := payload(d, order, time.Now())
		if err != nil {
			return err
		}
		return tx.QueueDelivery(ctx, d.EventKey, TypeDocumentAuthorized, body)
	})
}
