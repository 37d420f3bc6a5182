// Package consumer receives the invoicer's two queues: billing events, each
// recorded as a fiscal document, and provider events, whose news about a
// document is adopted when it moves the document forward. Both only write
// the database: a message is deleted after its commit, so a redelivered
// event changes nothing and a crash before the delete only causes a
// harmless redelivery. A message that cannot be parsed stays in the queue
// (counted) until the redrive policy moves it to the dead-letter queue.
package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/tracing"
)

// errPoison marks a message that can never be handled: it is left for the
// dead-letter queue.
var errPoison = errors.New("unparseable message")

// Handler handles one message body. It returns the outcome (a metric
// label) and an error when the message must stay in the queue.
type Handler func(ctx context.Context, body string) (outcome string, err error)

// Counter counts messages by queue and outcome; one is shared by every
// receiver of a process.
type Counter = *prometheus.CounterVec

// NewCounter registers the message counter.
func NewCounter(reg prometheus.Registerer) Counter {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_invoicer_messages_total",
		Help: "Messages received by queue (billing, provider) and outcome; poison ones go to the DLQ.",
	}, []string{"queue", "outcome"})
	reg.MustRegister(c)
	return c
}

// Receiver long-polls one queue and hands each message to a Handler.
type Receiver struct {
	sqs        *sqs.Client
	queueURL   string
	name       string
	handle     Handler
	log        *zap.Logger
	wait       time.Duration // long-poll duration, at most 20 s
	visibility time.Duration // how long a received batch stays hidden, renewed while it is handled
	counter    Counter
}

// Options are a receiver's timings.
type Options struct {
	Wait       time.Duration // long-poll duration (at most 20 s)
	Visibility time.Duration // visibility granted, and renewed, while a batch is handled
}

// NewReceiver returns a receiver of queueURL; name labels its metrics.
func NewReceiver(c *sqs.Client, queueURL, name string, h Handler, log *zap.Logger, counter Counter, o Options) *Receiver {
	return &Receiver{sqs: c, queueURL: queueURL, name: name, handle: h, log: log, wait: o.Wait, visibility: o.Visibility, counter: counter}
}

// Run receives and handles until ctx ends. A batch in hand is finished.
func (r *Receiver) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		httpserver.Beat(ctx)
		out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.queueURL), MaxNumberOfMessages: 10,
			WaitTimeSeconds: int32(r.wait / time.Second), VisibilityTimeout: int32(r.visibility / time.Second),
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("receive messages", zap.Error(err))
				backoff.Sleep(ctx, time.Second)
			}
			continue
		}
		if len(out.Messages) > 0 {
			r.batch(context.WithoutCancel(ctx), out.Messages)
		}
	}
	return nil
}

// handleTraced handles one message in a span that continues the trace its
// traceparent attribute carries (set by the relay from the outbox row).
func (r *Receiver) handleTraced(ctx context.Context, m types.Message) (string, error) {
	var parent string
	if a, ok := m.MessageAttributes[outbox.AttrTraceparent]; ok {
		parent = aws.ToString(a.StringValue)
	}
	ctx, span := tracing.Tracer().Start(tracing.WithTraceparent(ctx, parent), "sqs.receive "+r.name)
	defer span.End()
	return r.handle(ctx, aws.ToString(m.Body))
}

// batch handles msgs while keeping them hidden, then deletes, in one call,
// those handled.
func (r *Receiver) batch(ctx context.Context, msgs []types.Message) {
	stop := r.keepHidden(ctx, msgs)
	var done []types.DeleteMessageBatchRequestEntry
	for i, m := range msgs {
		outcome, err := r.handleTraced(ctx, m)
		r.counter.WithLabelValues(r.name, outcome).Inc()
		if err != nil {
			r.log.Warn("message left in the queue", zap.String("message_id", aws.ToString(m.MessageId)), zap.String("outcome", outcome), zap.Error(err))
			continue
		}
		done = append(done, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	stop()
	if len(done) == 0 {
		return
	}
	out, err := r.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.queueURL), Entries: done})
	if err != nil {
		r.log.Warn("delete messages (they will be redelivered, harmlessly)", zap.Error(err))
		return
	}
	for _, f := range out.Failed {
		r.log.Warn("delete message failed", zap.String("code", aws.ToString(f.Code)))
	}
}

// keepHidden renews the batch's visibility every half visibility period
// until the returned stop is called, so a slow batch is not redelivered to
// another receiver while it is still being handled.
func (r *Receiver) keepHidden(ctx context.Context, msgs []types.Message) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.visibility / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.extend(ctx, msgs)
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (r *Receiver) extend(ctx context.Context, msgs []types.Message) {
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(i)),
			ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(r.visibility / time.Second)}
	}
	if _, err := r.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
		QueueUrl: aws.String(r.queueURL), Entries: entries,
	}); err != nil && ctx.Err() == nil {
		r.log.Warn("extend visibility", zap.Error(err))
	}
}
