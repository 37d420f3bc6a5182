package app_test

import (
	"context"
	"path"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// TestOnlyNotificationsSignedByTheRelayAreApplied sends the authorized
// invoice of a paid order unsigned, signed by a key ingest does not know
// and signed with the relay's key id but a wrong secret: each is counted by
// reason, reaches the dead-letter queue, and neither the order's documents
// nor the merchant's deliveries change. The same notification signed by
// the relay's key is then applied and delivered.
func TestOnlyNotificationsSignedByTheRelayAreApplied(t *testing.T) {
	t.Parallel()
	m := newMerchant(t)
	e, c, url := startNotified(t, m)
	shortVisibility(t, c, url) // a refused notification is received again after 1s, so it reaches the DLQ soon
	e.order("o-trust", 122050)
	payment := e.pay("o-trust", "1220.50")
	e.waitCount(1, "SELECT count(*) FROM ingest.payments WHERE id = $1 AND status = 'PAID'", payment)
	orderID := e.orderID("o-trust")

	authorized := notification("4343", payment, "authorized", eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED, time.Now())
	untrusted := map[string]string{
		"unsigned":      "",
		"unknown_key":   "stranger:stranger-secret-0123456789",
		"bad_signature": "relay-test:forged-secret-0123456789", // the relay's id, the wrong secret
	}
	for _, key := range untrusted {
		sendSigned(t, c, url, authorized, key)
	}
	dlq := dlqURL(t, c, url)
	testwait.Until(t, 60*time.Second, 50*time.Millisecond, "the untrusted notifications in the dead-letter queue", func() bool {
		return queued(t, c, dlq) == len(untrusted)
	})
	for reason := range untrusted {
		if got := untrustedCounted(t, e, reason); got < 1 {
			t.Errorf("onceflow_ingest_untrusted_messages_total{queue=notifications,reason=%s} = %d, want at least 1", reason, got)
		}
	}
	if got := untrustedCounted(t, e, "unsigned_accepted"); got != 0 {
		t.Errorf("unsigned_accepted = %d, want 0 (the mode rejects)", got)
	}
	if n := e.count("SELECT count(*) FROM ingest.documents"); n != 0 {
		t.Errorf("%d documents recorded from untrusted notifications, want 0", n)
	}
	if n := e.count("SELECT count(*) FROM ingest.notification_deliveries"); n != 0 {
		t.Errorf("%d merchant deliveries from untrusted notifications, want 0", n)
	}
	if v := e.orderView(orderID); v.Invoice != nil {
		t.Errorf("the order shows an invoice from untrusted notifications: %+v", v.Invoice)
	}

	send(t, c, url, authorized) // signed by the relay's key
	testwait.Until(t, 20*time.Second, 20*time.Millisecond, "the merchant's delivery of the signed notification", func() bool {
		return m.deliveries(authorized.EventKey) == 1
	})
	if v := e.orderView(orderID); v.Invoice == nil || v.Invoice.Status != "authorized" || v.Invoice.Reference != "4343" {
		t.Errorf("order's invoice = %+v, want 4343 authorized", v.Invoice)
	}
}

// shortVisibility sets the queue's visibility timeout to 1s.
func shortVisibility(t testing.TB, c *sqs.Client, url string) {
	t.Helper()
	if _, err := c.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url),
		Attributes: map[string]string{string(types.QueueAttributeNameVisibilityTimeout): "1"}}); err != nil {
		t.Fatal(err)
	}
}

// dlqURL is the URL of the dead-letter queue of the queue at url.
func dlqURL(t testing.TB, c *sqs.Client, url string) string {
	t.Helper()
	u, err := sqsclient.QueueURL(context.Background(), c, path.Base(url)+"-dlq")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// queued is how many messages the queue at url holds, visible or not.
func queued(t testing.TB, c *sqs.Client, url string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// untrustedCounted reads onceflow_ingest_untrusted_messages_total for the
// notifications queue and reason from ingest's /metrics.
func untrustedCounted(t testing.TB, e *env, reason string) int64 {
	t.Helper()
	n, ok := metricValue(t, e, "onceflow_ingest_untrusted_messages_total", "queue", "notifications", "reason", reason)
	if !ok {
		t.Fatalf("no onceflow_ingest_untrusted_messages_total{reason=%q} on /metrics", reason)
	}
	return int64(n)
}
