package relay

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
)

// TestPublishedMessagesAreSignedWithTheRelaysKey publishes rows with a
// signing key and checks that each message received verifies under a
// keyset holding that key (as the invoicer's does), and not under one
// holding only another key.
func TestPublishedMessagesAreSignedWithTheRelaysKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	key, err := msgauth.ParseKey("relay-test:relay-test-secret-0123")
	if err != nil {
		t.Fatal(err)
	}
	s := testSettings("signer")
	s.Signer = &key
	r, reg := f.newRelay(t, s)
	start(t, r)
	msgs := make([]outbox.Message, 25)
	for i := range msgs {
		msgs[i] = message(i, billingType)
	}
	f.insert(t, msgs...)

	trusting, err := msgauth.ParseKeyset("relay-test:relay-test-secret-0123")
	if err != nil {
		t.Fatal(err)
	}
	other, err := msgauth.ParseKeyset("relay-old:another-relay-secret-0123")
	if err != nil {
		t.Fatal(err)
	}
	got := f.receive(t, len(msgs))
	expectDelivered(t, copiesOf(got, msgs), sentUnconfirmed(t, reg))
	for _, m := range msgs {
		received := got[m.EventKey]
		if len(received) == 0 {
			t.FailNow() // expectDelivered said which
		}
		body, attrs := aws.ToString(received[0].Body), received[0].MessageAttributes
		if err := trusting.Verify(body, attrs); err != nil {
			t.Fatalf("event %s: %v, want it signed by relay-test", m.EventKey, err)
		}
		if err := other.Verify(body, attrs); err == nil {
			t.Fatalf("event %s verifies under a key the relay does not hold", m.EventKey)
		}
	}
}
