package app_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
)

// providerKey is the key the provider events of TestProviderEventsMustBeSigned
// are trusted under, distinct from the billing one.
const providerKey = "relay-events:provider-events-secret-0123"

// TestProviderEventsMustBeSigned runs the invoicer trusting provider events
// only under providerKey: an event signed with it is handled (and
// deleted), while an unsigned one and one signed with the billing key
// (trusted for billing messages, not for these) are refused, counted by
// queue and reason, and reach the provider queue's dead-letter queue.
func TestProviderEventsMustBeSigned(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	c := sqstest.Client(t)
	_, billing := sqstest.Queue(t, c, "invoicer-billing", 2)
	name, provider := sqstest.Queue(t, c, "invoicer-provider", 2)
	dlq, err := sqsclient.QueueURL(context.Background(), c, name+"-dlq")
	if err != nil {
		t.Fatal(err)
	}
	base := start(t, env, billing, provider, map[string]string{
		"INVOICER_PROVIDER_EVENTS_KEYS": providerKey, "INVOICER_CONSUMER_VISIBILITY": "2s",
	})
	send := func(id, signer string) {
		b, err := eventsv1.Encode(&eventsv1.ProviderEvent{EventId: id, Provider: "invoicy", Reference: "999", ProviderStatus: "6"})
		if err != nil {
			t.Fatal(err)
		}
		attrs := outbox.Attributes(eventsv1.TypeProviderDocumentUpdated, "provider:invoicy:"+id, "")
		if signer != "" {
			k, err := msgauth.ParseKey(signer)
			if err != nil {
				t.Fatal(err)
			}
			attrs = k.Sign(string(b), attrs)
		}
		if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(provider),
			MessageBody: aws.String(string(b)), MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	send("evt-signed", providerKey)
	send("evt-unsigned", "")
	send("evt-billing-key", invoicertest.BillingKey)

	testwait.Until(t, 60*time.Second, 20*time.Millisecond, "the two untrusted events in the dead-letter queue", func() bool {
		return messages(t, c, dlq) == 2
	})
	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "the signed event handled and deleted", func() bool {
		return messages(t, c, provider) == 0
	})
	metrics := get(t, base+"/metrics")
	for series, atLeast := range map[string]float64{
		`onceflow_invoicer_messages_total{outcome="unknown_reference",queue="provider"}`:    1,
		`onceflow_invoicer_untrusted_messages_total{queue="provider",reason="unsigned"}`:    1,
		`onceflow_invoicer_untrusted_messages_total{queue="provider",reason="unknown_key"}`: 1,
	} {
		if got := sample(t, metrics, series); got < atLeast {
			t.Errorf("%s = %v, want at least %v", series, got, atLeast)
		}
	}
}

// sample is the value of series in the text exposition metrics, 0 when
// it is absent.
func sample(tb testing.TB, metrics, series string) float64 {
	tb.Helper()
	for _, line := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// messages counts the messages in queue url, visible or not.
func messages(tb testing.TB, c *sqs.Client, url string) int {
	tb.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}
