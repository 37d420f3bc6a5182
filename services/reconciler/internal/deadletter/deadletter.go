// Package deadletter reports how many messages wait in the dead-letter
// queues: SQS's ApproximateNumberOfMessages of each, read every interval
// into onceflow_dead_letter_messages{queue}. A message there is one a
// consumer gave up on after the queue's maxReceiveCount, and no service
// will ever read it by itself.
package deadletter

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// SQS is the part of the SQS client the gauge uses.
type SQS interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Gauge reads the depth of a fixed list of dead-letter queues.
type Gauge struct {
	client SQS
	queues []string
	urls   map[string]string // resolved queue URLs, by name
	depth  *prometheus.GaugeVec
	log    *zap.Logger
}

// New returns a gauge over the dead-letter queues named in queues,
// registered on reg. Read fills it.
func New(client SQS, queues []string, reg prometheus.Registerer, log *zap.Logger) *Gauge {
	g := &Gauge{client: client, queues: queues, urls: map[string]string{}, log: log,
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "onceflow_dead_letter_messages",
			Help: "Messages in each dead-letter queue (SQS ApproximateNumberOfMessages), read every interval.",
		}, []string{"queue"}),
	}
	reg.MustRegister(g.depth)
	return g
}

// Read sets each queue's depth. A queue that cannot be read (missing, no
// permission, SQS down) loses its series, so the alert's absent() guard
// sees it rather than a stale number, and the failure is logged.
func (g *Gauge) Read(ctx context.Context) {
	for _, q := range g.queues {
		n, err := g.depthOf(ctx, q)
		if err != nil {
			g.depth.DeleteLabelValues(q)
			g.log.Warn("read dead-letter queue depth", zap.String("queue", q), zap.Error(err))
			continue
		}
		g.depth.WithLabelValues(q).Set(float64(n))
	}
}

// depthOf returns queue's ApproximateNumberOfMessages, resolving its URL
// the first time.
func (g *Gauge) depthOf(ctx context.Context, queue string) (int, error) {
	url, ok := g.urls[queue]
	if !ok {
		out, err := g.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
		if err != nil {
			return 0, fmt.Errorf("queue url: %w", err)
		}
		url = aws.ToString(out.QueueUrl)
		g.urls[queue] = url
	}
	out, err := g.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0, fmt.Errorf("queue attributes: %w", err)
	}
	n, err := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	if err != nil {
		return 0, fmt.Errorf("ApproximateNumberOfMessages: %w", err)
	}
	return n, nil
}
