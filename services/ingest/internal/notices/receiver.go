package notices

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/worker"
)

// Receiver long-polls the notifications queue and hands each message signed
// by a trusted producer (msgauth.Trust) to a Recorder, deleting those it
// handled; an untrusted one is left for the dead-letter queue. It finds the queue when it starts
// running, retrying until it can: ingest takes payments whether or not SQS
// is up.
type Receiver struct {
	sqs      *sqs.Client
	queue    string // name or URL
	recorder *Recorder
	log      *zap.Logger
	wait     time.Duration
	counter  *prometheus.CounterVec
	trust    *msgauth.Trust
}

// Queue is the notifications queue's name in the receiver's metrics.
const Queue = "notifications"

// OutcomeUntrusted labels a notification refused for its signature: never
// recorded nor deleted, it reaches the dead-letter queue.
const OutcomeUntrusted = "untrusted"

// NewReceiver returns a receiver of queue (a name or URL) long-polling for
// up to wait and recording what trust lets through; it registers
// onceflow_ingest_notifications_total on reg.
func NewReceiver(c *sqs.Client, queue string, rec *Recorder, log *zap.Logger, reg prometheus.Registerer, wait time.Duration, trust *msgauth.Trust) *Receiver {
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_ingest_notifications_total",
		Help: "Notification events received from the notifications queue by outcome (recorded, queued for the merchant, unreadable, untrusted, error).",
	}, []string{"outcome"})
	reg.MustRegister(counter)
	return &Receiver{sqs: c, queue: queue, recorder: rec, log: log, wait: wait, counter: counter, trust: trust}
}

// Run receives and records until ctx ends; a batch in hand is finished.
func (r *Receiver) Run(ctx context.Context) error {
	url := r.queueURL(ctx)
	for ctx.Err() == nil {
		worker.Beat(ctx)
		out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			WaitTimeSeconds: int32(r.wait / time.Second), MessageAttributeNames: []string{"All"}})
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("receive notifications", zap.Error(err))
				backoff.Sleep(ctx, time.Second)
			}
			continue
		}
		r.batch(context.WithoutCancel(ctx), url, out.Messages)
	}
	return nil
}

// queueURL resolves the queue, retrying every few seconds until it can or
// ctx ends.
func (r *Receiver) queueURL(ctx context.Context) string {
	for attempt := 1; ; attempt++ {
		url, err := sqsclient.QueueURL(ctx, r.sqs, r.queue)
		if err == nil || ctx.Err() != nil {
			return url
		}
		r.log.Warn("notifications queue not found yet", zap.String("queue", r.queue), zap.Error(err))
		worker.Beat(ctx)
		backoff.Sleep(ctx, backoff.Policy{Base: time.Second, Cap: 10 * time.Second}.Delay(attempt))
	}
}

// batch records the trusted msgs and deletes, in one call, those recorded.
func (r *Receiver) batch(ctx context.Context, url string, msgs []types.Message) {
	var done []types.DeleteMessageBatchRequestEntry
	for i, out := range r.handle(ctx, msgs) {
		m := msgs[i]
		r.counter.WithLabelValues(out.Label).Inc()
		if out.Err != nil {
			r.log.Warn("notification left in the queue", zap.String("message_id", aws.ToString(m.MessageId)), zap.String("outcome", out.Label), zap.Error(out.Err))
			continue
		}
		done = append(done, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	if len(done) == 0 {
		return
	}
	if _, err := r.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: done}); err != nil {
		r.log.Warn("delete notifications (they will be redelivered, harmlessly)", zap.Error(err))
	}
}

// handle records, together, the msgs trust lets through; out[i] is
// msgs[i]'s outcome.
func (r *Receiver) handle(ctx context.Context, msgs []types.Message) []Outcome {
	out := make([]Outcome, len(msgs))
	var bodies []string
	var trusted []int
	for i, m := range msgs {
		if err := r.trust.Check(m, Queue, r.log); err != nil {
			out[i] = Outcome{OutcomeUntrusted, err}
			continue
		}
		bodies = append(bodies, aws.ToString(m.Body))
		trusted = append(trusted, i)
	}
	for n, o := range r.recorder.HandleBatch(ctx, bodies) {
		out[trusted[n]] = o
	}
	return out
}
