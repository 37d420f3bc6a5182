package consumer_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

const (
	trustedKey  = "relay-test:trusted-secret-0123456789"
	strangerKey = "stranger:stranger-secret-0123456789"
	forgedKey   = "relay-test:forged-secret-0123456789" // a trusted id, the wrong secret
)

// sendAttrs sends body with attrs to q.
func (q queue) sendAttrs(tb testing.TB, body string, attrs map[string]types.MessageAttributeValue) {
	tb.Helper()
	if _, err := q.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.url),
		MessageBody: aws.String(body), MessageAttributes: attrs}); err != nil {
		tb.Fatal(err)
	}
}

// runTrusting runs one billing receiver of q that trusts trusted's keys.
func runTrusting(tb testing.TB, q queue, env *invoicertest.Env, reg prometheus.Registerer, trust *msgauth.Trust) {
	tb.Helper()
	r := consumer.NewReceiver(q.c, q.url, "billing", consumer.NewBilling(env.Store, zaptest.NewLogger(tb), nil).Handle,
		zaptest.NewLogger(tb), consumer.NewCounter(reg), consumer.Options{Wait: time.Second, Visibility: 2 * time.Second, Trust: trust})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
}

func key(tb testing.TB, s string) msgauth.Key {
	tb.Helper()
	k, err := msgauth.ParseKey(s)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// TestUntrustedBillingMessagesAreRefusedCountedAndLeftForTheDLQ sends one
// signed billing event and four untrusted ones (unsigned, signed by an
// unknown key, by a trusted id with the wrong secret, and a signed body
// altered on the way): only the signed one becomes a document; each other
// one is counted by reason, never deleted, and reaches the dead-letter queue.
func TestUntrustedBillingMessagesAreRefusedCountedAndLeftForTheDLQ(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	q := newQueue(t, 2)
	reg := prometheus.NewRegistry()
	keys, err := msgauth.ParseKeyset(trustedKey)
	if err != nil {
		t.Fatal(err)
	}
	attrs := func(ref string) map[string]types.MessageAttributeValue {
		return outbox.Attributes("billing.payment_paid", "payment:"+ref+":paid", "")
	}
	signed := body(t, invoicertest.Payment("pay-signed", 100_00, false))
	q.sendAttrs(t, signed, key(t, trustedKey).Sign(signed, attrs("pay-signed")))
	unsigned := body(t, invoicertest.Payment("pay-unsigned", 100_00, false))
	q.sendAttrs(t, unsigned, attrs("pay-unsigned"))
	stranger := body(t, invoicertest.Payment("pay-stranger", 100_00, false))
	q.sendAttrs(t, stranger, key(t, strangerKey).Sign(stranger, attrs("pay-stranger")))
	forged := body(t, invoicertest.Payment("pay-forged", 100_00, false))
	q.sendAttrs(t, forged, key(t, forgedKey).Sign(forged, attrs("pay-forged")))
	original := body(t, invoicertest.Payment("pay-tampered", 100_00, false))
	tampered := body(t, invoicertest.Payment("pay-tampered", 999_999_00, false))
	q.sendAttrs(t, tampered, key(t, trustedKey).Sign(original, attrs("pay-tampered")))

	runTrusting(t, q, env, reg, &msgauth.Trust{Keys: keys, Untrusted: msgauth.NewUntrustedCounter(reg, "onceflow_invoicer_untrusted_messages_total", "billing")})

	testwait.Until(t, 60*time.Second, 20*time.Millisecond, "the four untrusted messages in the dead-letter queue", func() bool {
		return q.left(t, q.dlq) == 4
	})
	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "the signed message handled and deleted", func() bool {
		return q.left(t, q.url) == 0
	})
	if n := documents(t, env); n != 1 {
		t.Fatalf("%d documents recorded, want 1 (the signed event's)", n)
	}
	var ref string
	if err := env.Pool.QueryRow(t.Context(), "SELECT source_ref FROM invoicer.fiscal_documents").Scan(&ref); err != nil || ref != "pay-signed" {
		t.Fatalf("recorded document of %q (%v), want pay-signed", ref, err)
	}
	// Each refused message is counted at every receive this receiver saw:
	// at least once. Not necessarily maxReceiveCount times: the queue also
	// counts a receive whose answer never reached the client (a long poll
	// cut short on a loaded machine), and that one can move it to the DLQ.
	for reason, atLeast := range map[string]float64{msgauth.ReasonUnsigned: 1, msgauth.ReasonUnknownKey: 1, msgauth.ReasonBadSignature: 2} {
		if got := invoicertest.Metric(t, reg, "onceflow_invoicer_untrusted_messages_total", map[string]string{"reason": reason}); got < atLeast {
			t.Errorf("untrusted %s counted %v times, want at least %v (one per message)", reason, got, atLeast)
		}
	}
	if got := invoicertest.Metric(t, reg, "onceflow_invoicer_messages_total", map[string]string{"outcome": consumer.OutcomeUntrusted}); got < 4 {
		t.Errorf("%v receives counted untrusted, want at least 4", got)
	}
}

// TestUnsignedAcceptedOnlyInTheRolloutMode checks that AcceptUnsigned hands
// on an unsigned event (counted as unsigned_accepted) but still refuses one
// signed by an unknown key.
func TestUnsignedAcceptedOnlyInTheRolloutMode(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	q := newQueue(t, 2)
	reg := prometheus.NewRegistry()
	keys, err := msgauth.ParseKeyset(trustedKey)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := body(t, invoicertest.Payment("pay-rollout", 100_00, false))
	q.sendAttrs(t, unsigned, outbox.Attributes("billing.payment_paid", "payment:pay-rollout:paid", ""))
	stranger := body(t, invoicertest.Payment("pay-rollout-stranger", 100_00, false))
	q.sendAttrs(t, stranger, key(t, strangerKey).Sign(stranger, outbox.Attributes("billing.payment_paid", "payment:pay-rollout-stranger:paid", "")))

	runTrusting(t, q, env, reg, &msgauth.Trust{Keys: keys, AcceptUnsigned: true, Untrusted: msgauth.NewUntrustedCounter(reg, "onceflow_invoicer_untrusted_messages_total", "billing")})

	testwait.Until(t, 60*time.Second, 20*time.Millisecond, "the stranger's message in the dead-letter queue", func() bool {
		return q.left(t, q.dlq) == 1
	})
	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "the unsigned message handled", func() bool { return documents(t, env) == 1 })
	if got := invoicertest.Metric(t, reg, "onceflow_invoicer_untrusted_messages_total", map[string]string{"reason": msgauth.ReasonUnsignedAccepted}); got != 1 {
		t.Errorf("unsigned_accepted counted %v times, want 1", got)
	}
}

// TestUntrustedProviderEventsAreRefusedAndLeftForTheDLQ runs the provider
// events' receiver of a provider that cannot be looked up (blind mode),
// whose events are applied as they come: a signed event is applied, while
// an unsigned one, one signed by an unknown key and one under a trusted id
// with the wrong secret, each of which would reject or void a document,
// are counted by queue and reason, change nothing and reach the dead-letter
// queue.
func TestUntrustedProviderEventsAreRefusedAndLeftForTheDLQ(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	q := newQueue(t, 2)
	reg := prometheus.NewRegistry()
	keys, err := msgauth.ParseKeyset(trustedKey)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]store.Document{}
	for _, ref := range []string{"signed", "unsigned", "stranger", "forged"} {
		d := env.Record(t, invoicertest.Payment("pay-"+ref, 100_00, false))
		env.Hold(t, d, fiscal.StatusPendingDGI, "")
		docs[ref] = d
	}
	send := func(ref, code string, signer *msgauth.Key) {
		b, err := eventsv1.Encode(&eventsv1.ProviderEvent{EventId: "evt-" + ref, Provider: "invoicy", Reference: docs[ref].Reference, ProviderStatus: code})
		if err != nil {
			t.Fatal(err)
		}
		attrs := outbox.Attributes(eventsv1.TypeProviderDocumentUpdated, "provider:invoicy:evt-"+ref, "")
		if signer != nil {
			attrs = signer.Sign(string(b), attrs)
		}
		q.sendAttrs(t, string(b), attrs)
	}
	trusted, stranger, forged := key(t, trustedKey), key(t, strangerKey), key(t, forgedKey)
	send("signed", "5", &trusted)
	send("unsigned", "3", nil)
	send("stranger", "6", &stranger)
	send("forged", "3", &forged)

	h := consumer.NewProvider(env.Store, invoicy.DefaultStatusMap(), consumer.Holder{Name: "invoicy"}, zaptest.NewLogger(t), nil)
	r := consumer.NewReceiver(q.c, q.url, "provider", consumer.Each(h.Handle), zaptest.NewLogger(t), consumer.NewCounter(reg),
		consumer.Options{Wait: time.Second, Visibility: 2 * time.Second,
			Trust: &msgauth.Trust{Keys: keys, Untrusted: msgauth.NewUntrustedCounter(reg, "onceflow_invoicer_untrusted_messages_total", "provider")}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	testwait.Until(t, 60*time.Second, 20*time.Millisecond, "the three untrusted events in the dead-letter queue", func() bool {
		return q.left(t, q.dlq) == 3
	})
	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "the signed event handled and deleted", func() bool {
		return q.left(t, q.url) == 0
	})
	if d := env.Document(t, docs["signed"].Reference); d.Status != fiscal.StatusAuthorized {
		t.Errorf("the signed event's document is %s, want authorized", d.Status)
	}
	for _, ref := range []string{"unsigned", "stranger", "forged"} {
		if d := env.Document(t, docs[ref].Reference); d.Status != fiscal.StatusPendingDGI {
			t.Errorf("the %s event's document is %s, want still pending_dgi", ref, d.Status)
		}
	}
	for reason, atLeast := range map[string]float64{msgauth.ReasonUnsigned: 1, msgauth.ReasonUnknownKey: 1, msgauth.ReasonBadSignature: 1} {
		labels := map[string]string{"queue": "provider", "reason": reason}
		if got := invoicertest.Metric(t, reg, "onceflow_invoicer_untrusted_messages_total", labels); got < atLeast {
			t.Errorf("untrusted provider %s counted %v times, want at least %v", reason, got, atLeast)
		}
	}
}
