// Package queues reads the depth of the pipeline's SQS queues and their
// dead-letter queues (GetQueueAttributes) for the console's board.
package queues

import (
	"context"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Depth is one queue's approximate message counts, or why they could not
// be read.
type Depth struct {
	Queue    string
	Visible  int64 // waiting to be received
	InFlight int64 // received, not yet deleted
	Delayed  int64
	DLQ      string
	DLQDepth int64 // every message in the dead-letter queue
	Error    string
}

// Reader reads the depth of a fixed list of queues; each queue's
// dead-letter queue is its name with "-dlq" appended.
type Reader struct {
	client *sqs.Client
	names  []string
}

// New returns a reader of names through client.
func New(client *sqs.Client, names []string) *Reader {
	return &Reader{client: client, names: names}
}

// Depths reads every queue at once, in the configured order.
func (r *Reader) Depths(ctx context.Context) []Depth {
	out := make([]Depth, len(r.names))
	var wg sync.WaitGroup
	for i, name := range r.names {
		wg.Go(func() { out[i] = r.depth(ctx, name) })
	}
	wg.Wait()
	return out
}

func (r *Reader) depth(ctx context.Context, name string) Depth {
	d := Depth{Queue: name, DLQ: name + "-dlq"}
	main, err := r.attributes(ctx, name)
	if err != nil {
		d.Error = err.Error()
		return d
	}
	d.Visible, d.InFlight, d.Delayed = main[0], main[1], main[2]
	dlq, err := r.attributes(ctx, d.DLQ)
	if err != nil {
		d.Error = err.Error()
		return d
	}
	d.DLQDepth = dlq[0] + dlq[1] + dlq[2]
	return d
}

// attributes returns a queue's visible, in-flight and delayed counts.
func (r *Reader) attributes(ctx context.Context, name string) ([3]int64, error) {
	var n [3]int64
	u, err := r.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return n, err
	}
	names := []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed}
	out, err := r.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl, AttributeNames: names})
	if err != nil {
		return n, err
	}
	for i, a := range names {
		n[i], _ = strconv.ParseInt(out.Attributes[string(a)], 10, 64)
	}
	return n, nil
}
