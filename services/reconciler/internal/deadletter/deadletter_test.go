package deadletter_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/services/reconciler/internal/deadletter"
)

// queue creates a queue of a unique name holding n messages.
func queue(tb testing.TB, c *sqs.Client, n int) (name, url string) {
	tb.Helper()
	name, url = sqstest.Queue(tb, c, "dlq-test", 5)
	for range n {
		if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("poison")}); err != nil {
			tb.Fatal(err)
		}
	}
	return name, url
}

// depths reads the gauge's series from reg, by queue.
func depths(tb testing.TB, reg *prometheus.Registry) map[string]float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

func TestReadReportsEachDeadLetterQueuesDepth(t *testing.T) {
	t.Parallel()
	c := sqstest.Client(t)
	full, fullURL := queue(t, c, 3)
	empty, _ := queue(t, c, 0)
	missing := "dlq-test-missing-" + uuid.NewString()[:8]
	reg := prometheus.NewRegistry()
	g := deadletter.New(c, []string{full, empty, missing}, reg, zaptest.NewLogger(t))

	testwait.Until(t, 10*time.Second, 50*time.Millisecond, "the gauge to read 3 and 0", func() bool {
		g.Read(context.Background())
		d := depths(t, reg)
		return d[full] == 3 && len(d) == 2
	})
	if d := depths(t, reg); d[empty] != 0 {
		t.Fatalf("depths %v, want %s at 0 and no series for the missing queue", d, empty)
	}

	// A queue that can no longer be read loses its series rather than
	// keeping its last depth.
	if _, err := c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(fullURL)}); err != nil {
		t.Fatal(err)
	}
	g.Read(context.Background())
	if d := depths(t, reg); len(d) != 1 {
		t.Fatalf("depths %v after %s was deleted, want only %s", d, full, empty)
	}
}
