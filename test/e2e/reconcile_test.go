package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestReconcilerRepublishesALostBillingMessage loses a payment's billing
// message between the relay and the invoicer (the invoicer is down and the
// queue is purged) and checks that the reconciler has ingest announce it
// again (the relay publishes it once more, signed with the relay's key, the
// only one the invoicer trusts), that this yields exactly one document at
// the fiscal sandbox, and that a second run asks for nothing and finds
// nothing, the provider audit included.
func TestReconcilerRepublishesALostBillingMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := startStack(ctx, t, stack.Options{})

	if err := s.Kill("invoicer-1"); err != nil {
		t.Fatal(err)
	}
	payment, err := s.Pay(ctx, fmt.Sprintf("e2e-reconcile-%d", time.Now().UnixNano()), 122000)
	if err != nil {
		t.Fatal(err)
	}
	waitPublished(ctx, t, s, "payment:"+payment+":paid")
	purge(ctx, t, s.Queues["BILLING"])
	if err := s.Restart(ctx, "invoicer-1"); err != nil {
		t.Fatal(err)
	}

	if sum := runOnce(ctx, t, s); !strings.Contains(sum, " republished=1 ") {
		t.Fatalf("first run after the lost message: %q, want republished=1", sum)
	}
	waitPublished(ctx, t, s, "payment:"+payment+":paid") // the relay published it again
	source := "payment:" + payment
	if err := s.WaitAuthorized(ctx, source, time.Minute); err != nil {
		t.Fatal(err)
	}

	sum := runOnce(ctx, t, s)
	if !strings.Contains(sum, " missing=0 republished=0 ") || !strings.Contains(sum, " findings=0 ") {
		t.Fatalf("second run: %q, want nothing missing, republished or found", sum)
	}
	time.Sleep(2 * time.Second) // room for a stray resend to do harm
	if err := s.WaitAuthorized(ctx, source, time.Second); err != nil {
		t.Fatalf("after the second run: %v", err)
	}
}

// waitPublished waits until the relay has published ingest's outbox row
// with eventKey.
func waitPublished(ctx context.Context, t *testing.T, s *stack.Stack, eventKey string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, s.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = stack.WaitFor(ctx, time.Minute, func() (bool, error) {
		var published bool
		err := conn.QueryRow(ctx, `SELECT published_at IS NOT NULL FROM ingest.outbox WHERE event_key = $1`, eventKey).Scan(&published)
		if err == nil && !published {
			err = fmt.Errorf("outbox row %s not published yet", eventKey)
		}
		return published, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// purge deletes every message of the queue named name.
func purge(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	client, err := sqsclient.NewClient(ctx, region, os.Getenv("AWS_ENDPOINT_URL_SQS"))
	if err != nil {
		t.Fatal(err)
	}
	url, err := sqsclient.QueueURL(ctx, client, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatalf("purge %s: %v", name, err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range attrs.Attributes {
		if v != "0" {
			t.Fatalf("after the purge %s has %s=%s, want the message gone", name, k, v)
		}
	}
}

// runOnce runs `reconciler run-once` and returns its summary line. The
// stack names the fiscal provider, so every run audits it too.
func runOnce(ctx context.Context, t *testing.T, s *stack.Stack) string {
	t.Helper()
	out, err := s.RunReconciler(ctx)
	if err != nil {
		t.Fatalf("reconciler run-once: %v\n%s", err, out)
	}
	if strings.Contains(out, "provider audit off") {
		t.Fatalf("run-once did not audit the provider:\n%s", out)
	}
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "reconcile: ") {
			return strings.TrimSpace(line) + " "
		}
	}
	t.Fatalf("run-once printed no summary:\n%s", out)
	return ""
}
