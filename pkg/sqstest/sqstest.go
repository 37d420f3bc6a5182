// Package sqstest gives tests an SQS client for the emulator named by
// AWS_ENDPOINT_URL_SQS and uniquely named queues that are deleted afterwards.
package sqstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/sqsclient"
)

// Client returns a client for AWS_ENDPOINT_URL_SQS, failing the test with
// directions when the variable is unset or the server does not answer.
func Client(tb testing.TB) *sqs.Client {
	tb.Helper()
	endpoint := os.Getenv("AWS_ENDPOINT_URL_SQS")
	if endpoint == "" {
		tb.Fatalf("AWS_ENDPOINT_URL_SQS is not set: tests need a real SQS server (fauxqs or LocalStack); %s", pgtest.Hint)
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := sqsclient.NewClient(ctx, region, endpoint)
	if err != nil {
		tb.Fatalf("sqs client: %v", err)
	}
	if _, err := c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)}); err != nil {
		tb.Fatalf("SQS at %s does not answer (%v); %s", endpoint, err, pgtest.Hint)
	}
	return c
}

// Queue creates a queue named after prefix plus a random suffix, with a
// dead-letter queue after maxReceive receives, deletes both when the test
// ends, and returns the queue's name and URL.
func Queue(tb testing.TB, c *sqs.Client, prefix string, maxReceive int) (name, url string) {
	tb.Helper()
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	name = prefix + "-" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url, err := sqsclient.EnsureQueue(ctx, c, name, maxReceive)
	if err != nil {
		tb.Fatalf("create test queue: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range []string{name, name + "-dlq"} {
			if u, err := sqsclient.QueueURL(ctx, c, n); err == nil {
				_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
			}
		}
	})
	return name, url
}
