// Package consumer records the fiscal documents billing events ask for. It
// only records: a document row is inserted idempotently and the message is
// deleted after the commit, so a redelivered event changes nothing and a
// crash before the delete only causes a harmless redelivery.
package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/services/invoicer/internal/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Consumer long-polls the billing queue.
type Consumer struct {
	sqs      *sqs.Client
	queueURL string
	queries  *store.Queries
	log      *zap.Logger
	wait     time.Duration
	recorded *prometheus.CounterVec
}

// New returns a consumer of queueURL; wait is the long-poll duration (at
// most 20 s).
func New(c *sqs.Client, queueURL string, q *store.Queries, log *zap.Logger, reg prometheus.Registerer, wait time.Duration) *Consumer {
	con := &Consumer{sqs: c, queueURL: queueURL, queries: q, log: log, wait: wait,
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_invoicer_billing_messages_total", Help: "Billing messages by outcome (recorded, duplicate, poison, error).",
		}, []string{"outcome"})}
	reg.MustRegister(con.recorded)
	return con
}

// Run receives and records until ctx ends.
func (c *Consumer) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(c.queueURL), MaxNumberOfMessages: 10,
			WaitTimeSeconds: int32(c.wait / time.Second), MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("receive billing messages", zap.Error(err))
				sleep(ctx, time.Second)
			}
			continue
		}
		c.handle(context.WithoutCancel(ctx), out.Messages)
	}
	return nil
}

// handle records each message and deletes, in one batch, those recorded.
// A message that cannot be parsed stays in the queue: after the redrive
// policy's receive count it moves to the dead-letter queue.
func (c *Consumer) handle(ctx context.Context, msgs []types.Message) {
	var done []types.DeleteMessageBatchRequestEntry
	for i, m := range msgs {
		outcome, err := c.record(ctx, aws.ToString(m.Body))
		c.recorded.WithLabelValues(outcome).Inc()
		if err != nil {
			c.log.Warn("billing message not recorded", zap.String("message_id", aws.ToString(m.MessageId)), zap.String("outcome", outcome), zap.Error(err))
			continue
		}
		done = append(done, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	if len(done) == 0 {
		return
	}
	out, err := c.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(c.queueURL), Entries: done})
	if err != nil {
		c.log.Warn("delete billing messages (they will be redelivered, harmlessly)", zap.Error(err))
		return
	}
	for _, f := range out.Failed {
		c.log.Warn("delete billing message failed", zap.String("code", aws.ToString(f.Code)))
	}
}

var errPoison = errors.New("unparseable billing event")

// record inserts the document a billing event asks for. It returns the
// outcome label and an error when the message must not be deleted.
func (c *Consumer) record(ctx context.Context, body string) (string, error) {
	var ev eventsv1.BillingEvent
	if err := eventsv1.Decode([]byte(body), &ev); err != nil {
		return "poison", fmt.Errorf("%w: %v", errPoison, err)
	}
	params, err := Params(&ev)
	if err != nil {
		return "poison", fmt.Errorf("%w: %v", errPoison, err)
	}
	n, err := c.queries.DocumentRecord(ctx, params)
	if err != nil {
		return "error", fmt.Errorf("record %s: %w", ev.EventKey, err)
	}
	if n == 0 {
		c.log.Info("document already recorded", zap.String("event_key", ev.EventKey))
		return "duplicate", nil
	}
	c.log.Info("document recorded", zap.String("event_key", ev.EventKey), zap.String("reference", params.Reference), zap.Int32("cfe_type", params.CfeType))
	return "recorded", nil
}

// Params turns a billing event into the document row to record: kind,
// deterministic reference and CFE type, with the buyer and lines as JSON.
func Params(ev *eventsv1.BillingEvent) (store.DocumentRecordParams, error) {
	kind, ok := map[eventsv1.DocumentKind]fiscal.Kind{
		eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE:     fiscal.KindInvoice,
		eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE: fiscal.KindCreditNote,
	}[ev.Kind]
	switch {
	case !ok:
		return store.DocumentRecordParams{}, fmt.Errorf("unknown document kind %v", ev.Kind)
	case ev.SourceRef == "" || ev.AmountMinor <= 0 || ev.Currency == "" || ev.GetBuyer() == nil:
		return store.DocumentRecordParams{}, errors.New("event lacks source_ref, amount, currency or buyer")
	case (kind == fiscal.KindCreditNote) != (ev.PaymentRef != ""):
		return store.DocumentRecordParams{}, errors.New("a credit note, and only a credit note, names its payment_ref")
	}
	b := ev.GetBuyer()
	buyer := fiscal.Buyer{DocType: b.DocType, Country: b.DocCountry, Number: b.DocNumber, Name: b.LegalName,
		Address: b.Address, City: b.City, Department: b.Department, Email: b.Email}
	lines := make([]fiscal.Line, 0, len(ev.Lines))
	for _, l := range ev.Lines {
		lines = append(lines, fiscal.Line{Description: l.Description, Quantity: l.Quantity, UnitMinor: l.UnitMinor, AmountMinor: l.AmountMinor})
	}
	buyerJSON, err := json.Marshal(buyer)
	if err != nil {
		return store.DocumentRecordParams{}, err
	}
	linesJSON, err := json.Marshal(lines)
	if err != nil {
		return store.DocumentRecordParams{}, err
	}
	p := store.DocumentRecordParams{
		SourceKind: ev.SourceKind, SourceRef: ev.SourceRef, Kind: string(kind), EventKey: ev.EventKey,
		Reference: fiscal.Reference(ev.SourceKind, ev.SourceRef, kind), CfeType: int32(fiscal.TypeFor(buyer, kind)),
		AmountMinor: ev.AmountMinor, Currency: ev.Currency, Buyer: buyerJSON, Lines: linesJSON,
	}
	if kind == fiscal.KindCreditNote {
		p.OriginalSourceRef = &ev.PaymentRef
	}
	return p, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
