// Package consumer receives the invoicer's two queues: billing events, each
// recorded as a fiscal document (a received batch in one transaction), and
// provider events, whose news about a document is adopted when it moves the
// document forward. Both only write the database: a message is deleted after
// its commit, so a redelivered event changes nothing and a crash before the
// delete only causes a harmless redelivery. A message that cannot be parsed
// stays in the queue (counted) until the redrive policy moves it to the
// dead-letter queue.
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
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/pkg/worker"
)

// errPoison marks a message that can never be handled: it is left for the
// dead-letter queue.
var errPoison = errors.New("unparseable message")

// Handler handles one message body. It returns the outcome (a metric
// label) and an error when the message must stay in the queue.
type Handler func(ctx context.Context, body string) (outcome string, err error)

// Message is one received message as a BatchHandler sees it.
type Message struct {
	// Ctx carries the message's own span, which continues the trace its
	// traceparent attribute names (set by the relay from the outbox row).
	Ctx  context.Context
	Body string
}

// Result is what became of one message: Outcome is its metric label, and
// Err, when set, leaves the message in the queue.
type Result struct {
	Outcome string
	Err     error
}

// BatchHandler handles a received batch under ctx and returns one Result per
// message, in the batch's order.
type BatchHandler func(ctx context.Context, msgs []Message) []Result

// Each is the BatchHandler that hands the messages to h one by one.
func Each(h Handler) BatchHandler {
	return func(_ context.Context, msgs []Message) []Result {
		res := make([]Result, len(msgs))
		for i, m := range msgs {
			res[i].Outcome, res[i].Err = h(m.Ctx, m.Body)
		}
		return res
	}
}

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

// Receiver long-polls one queue and hands each batch to a BatchHandler.
type Receiver struct {
	sqs        *sqs.Client
	queueURL   string
	name       string
	handle     BatchHandler
	log        *zap.Logger
	wait       time.Duration // long-poll duration, at most 20 s
	visibility time.Duration // how long a received batch stays hidden, renewed while it is handled
	counter    Counter
	trust      *msgauth.Trust // nil: every message is handed on
}

// Options are a receiver's timings.
type Options struct {
	Wait       time.Duration // long-poll duration (at most 20 s)
	Visibility time.Duration // visibility granted, and renewed, while a batch is handled
	// Trust, when set, hands on only messages signed by a trusted producer.
	Trust *msgauth.Trust
}

// NewReceiver returns a receiver of queueURL; name labels its metrics.
func NewReceiver(c *sqs.Client, queueURL, name string, h BatchHandler, log *zap.Logger, counter Counter, o Options) *Receiver {
	return &Receiver{sqs: c, queueURL: queueURL, name: name, handle: h, log: log, wait: o.Wait, visibility: o.Visibility, counter: counter, trust: o.Trust}
}

// Run receives and handles until ctx ends. A batch in hand is finished.
func (r *Receiver) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		worker.Beat(ctx)
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

// batch handles msgs while keeping them hidden, then deletes, in one call,
// those handled.
func (r *Receiver) batch(ctx context.Context, msgs []types.Message) {
	res := make([]Result, len(msgs))
	trusted := r.trusted(msgs, res)
	if len(trusted) > 0 {
		stop := r.keepHidden(ctx, trusted)
		traced, end := r.traced(ctx, trusted)
		handled := r.handle(ctx, traced)
		end()
		stop()
		for i, j := 0, 0; i < len(msgs); i++ {
			if res[i].Outcome == "" {
				res[i], j = handled[j], j+1
			}
		}
	}
	var done []types.DeleteMessageBatchRequestEntry
	for i, m := range msgs {
		r.counter.WithLabelValues(r.name, res[i].Outcome).Inc()
		if res[i].Err != nil {
			r.log.Warn("message left in the queue", zap.String("message_id", aws.ToString(m.MessageId)), zap.String("outcome", res[i].Outcome), zap.Error(res[i].Err))
			continue
		}
		done = append(done, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	r.delete(ctx, done)
}

// trusted returns the messages the receiver's Trust hands on, in order,
// and sets the Result of each refused one in res.
func (r *Receiver) trusted(msgs []types.Message, res []Result) []types.Message {
	if r.trust == nil {
		return msgs
	}
	var out []types.Message
	for i, m := range msgs {
		if err := r.trust.Check(m, r.name, r.log); err != nil {
			res[i] = Result{Outcome: OutcomeUntrusted, Err: err}
			continue
		}
		out = append(out, m)
	}
	return out
}

// traced starts one span per message, continuing the trace its traceparent
// attribute carries; end ends them all.
func (r *Receiver) traced(ctx context.Context, msgs []types.Message) (traced []Message, end func()) {
	traced = make([]Message, len(msgs))
	spans := make([]trace.Span, len(msgs))
	for i, m := range msgs {
		var parent string
		if a, ok := m.MessageAttributes[outbox.AttrTraceparent]; ok {
			parent = aws.ToString(a.StringValue)
		}
		traced[i].Ctx, spans[i] = tracing.Tracer().Start(tracing.WithTraceparent(ctx, parent), "sqs.receive "+r.name)
		traced[i].Body = aws.ToString(m.Body)
	}
	return traced, func() {
		for _, s := range spans {
			s.End()
		}
	}
}

// delete deletes the handled messages; those it fails to delete are
// redelivered, harmlessly.
func (r *Receiver) delete(ctx context.Context, done []types.DeleteMessageBatchRequestEntry) {
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
