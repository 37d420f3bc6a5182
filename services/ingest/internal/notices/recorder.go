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
	out := r.HandleBatch(ctx, []string{body})
	return out[0].Label, out[0].Err
}

// Outcome is what became of one notification: its metric label (recorded,
// queued, unreadable, error) and, when it stays in the queue, why.
type Outcome struct {
	Label string
	Err   error
}

// HandleBatch records the events in bodies as Handle does each, out[i]
// being bodies[i]'s outcome. The documents whose event queues no merchant
// delivery are written in one statement; should it fail, one at a time, so
// each keeps its own error.
func (r *Recorder) HandleBatch(ctx context.Context, bodies []string) (out []Outcome) {
	out = make([]Outcome, len(bodies))
	docs := make([]store.Document, len(bodies))
	var plain []int
	for i, body := range bodies {
		d, send, err := r.read(body)
		switch {
		case err != nil:
			out[i] = Outcome{"unreadable", err}
		case send:
			out[i] = r.recordQueued(ctx, d)
		default:
			docs[i] = d
			plain = append(plain, i)
		}
	}
	if len(plain) > 1 {
		batch := make([]store.Document, len(plain))
		for n, i := range plain {
			batch[n] = docs[i]
		}
		if err := r.store.RecordDocuments(ctx, batch); err == nil {
			for _, i := range plain {
				out[i] = r.recorded(docs[i], "recorded")
			}
			return out
		}
	}
	for _, i := range plain {
		out[i] = r.outcome(docs[i], "recorded", r.store.RecordDocument(ctx, docs[i]))
	}
	return out
}

// read decodes body into the document it announces and whether its
// delivery to the merchant is queued.
func (r *Recorder) read(body string) (d store.Document, send bool, err error) {
	var ev eventsv1.NotificationEvent
	if err := eventsv1.Decode([]byte(body), &ev); err != nil {
		return d, false, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	d, err = document(&ev)
	return d, r.deliver && ev.GetType() == eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED, err
}

// recordQueued records d in one transaction with its merchant delivery,
// then wakes the deliverer.
func (r *Recorder) recordQueued(ctx context.Context, d store.Document) Outcome {
	out := r.outcome(d, "queued", r.recordWithDelivery(ctx, d))
	if out.Err == nil && r.wake != nil {
		r.wake()
	}
	return out
}

// outcome is label when d was recorded (err nil), else an error outcome.
func (r *Recorder) outcome(d store.Document, label string, err error) Outcome {
	if err != nil {
		return Outcome{"error", fmt.Errorf("record notification %s: %w", d.EventKey, err)}
	}
	return r.recorded(d, label)
}

// recorded logs d's recording and returns label's outcome.
func (r *Recorder) recorded(d store.Document, label string) Outcome {
	r.log.Info("document notification", zap.String("event_key", d.EventKey), zap.String("reference", d.Reference), zap.String("status", d.Status))
	return Outcome{Label: label}
}

// recordWithDelivery writes d in one transaction with the merchant
// delivery it queues.
func (r *Recorder) recordWithDelivery(ctx context.Context, d store.Document) error {
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
