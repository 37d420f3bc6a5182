package msgauth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
)

const (
	relayKey = "relay-1:0123456789abcdef-relay"
	reconKey = "reconciler-1:0123456789abcdef-recon"
)

func mustKey(t *testing.T, s string) msgauth.Key {
	t.Helper()
	k, err := msgauth.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestVerifyAcceptsOnlyMessagesSignedByATrustedKey(t *testing.T) {
	t.Parallel()
	ks, err := msgauth.ParseKeyset(relayKey + ", " + reconKey)
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"amount_minor":10000}`
	attrs := outbox.Attributes("billing.payment_paid", "payment:p1:paid", "")
	signed := mustKey(t, relayKey).Sign(body, attrs)
	otherKey := mustKey(t, "relay-1:another-secret-of-16-bytes").Sign(body, attrs)
	strange := mustKey(t, "stranger:0123456789abcdef-strange").Sign(body, attrs)
	retyped := mustKey(t, relayKey).Sign(body, attrs)
	retyped[outbox.AttrType] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("billing.refund_succeeded")}
	garbled := mustKey(t, relayKey).Sign(body, attrs)
	garbled[msgauth.AttrSignature] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("not base64!")}
	cases := []struct {
		name   string
		body   string
		attrs  map[string]types.MessageAttributeValue
		reason string // empty when the message must be accepted
	}{
		{"signed by the relay", body, signed, ""},
		{"signed by the reconciler", body, mustKey(t, reconKey).Sign(body, attrs), ""},
		{"unsigned", body, attrs, msgauth.ReasonUnsigned},
		{"no attributes", body, nil, msgauth.ReasonUnsigned},
		{"tampered body", `{"amount_minor":99999}`, signed, msgauth.ReasonBadSignature},
		{"retyped", body, retyped, msgauth.ReasonBadSignature},
		{"known id, wrong secret", body, otherKey, msgauth.ReasonBadSignature},
		{"garbled signature", body, garbled, msgauth.ReasonBadSignature},
		{"unknown key id", body, strange, msgauth.ReasonUnknownKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := ks.Verify(c.body, c.attrs)
			if c.reason == "" {
				if err != nil {
					t.Fatalf("Verify = %v, want it accepted", err)
				}
				return
			}
			var refused *msgauth.Refused
			if !errors.As(err, &refused) || refused.Reason != c.reason {
				t.Fatalf("Verify = %v, want refused as %s", err, c.reason)
			}
		})
	}
}

func TestParseRefusesWeakOrMalformedKeysWithoutShowingThem(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"short:tooshort", "nosecret", ":0123456789abcdef", "bad id:0123456789abcdef", relayKey + "," + relayKey} {
		_, err := msgauth.ParseKeyset(s)
		if err == nil {
			t.Errorf("ParseKeyset(%q) accepted", s)
			continue
		}
		if strings.Contains(err.Error(), "tooshort") || strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("ParseKeyset(%q) error shows the secret: %v", s, err)
		}
	}
	ks, err := msgauth.ParseKeyset("")
	if err != nil || ks.Len() != 0 {
		t.Fatalf("ParseKeyset(\"\") = %v, %v; want an empty set", ks.IDs(), err)
	}
}

// The signature is the HMAC-SHA256, under the secret, of the parts
// docs/security.md lists, each as "<decimal length>:<bytes>": computed here
// from that description, so a change of the input's layout, which would
// make producers and consumers of different versions refuse each other,
// fails.
func TestSignatureIsTheDocumentedHMAC(t *testing.T) {
	t.Parallel()
	const body = `{"amount_minor":10000,"name":"José"}`
	key := mustKey(t, relayKey)
	for range 2 { // the second signs with a reused HMAC state
		attrs := key.Sign(body, outbox.Attributes("billing.payment_paid", "payment:p1:paid", "00-trace"))
		h := hmac.New(sha256.New, []byte("0123456789abcdef-relay"))
		for _, part := range []string{"onceflow-message-v1", "relay-1", "billing.payment_paid", "payment:p1:paid", body} {
			fmt.Fprintf(h, "%d:%s", len(part), part)
		}
		want := base64.StdEncoding.EncodeToString(h.Sum(nil))
		if got := aws.ToString(attrs[msgauth.AttrSignature].StringValue); got != want {
			t.Fatalf("signature %s, want %s", got, want)
		}
		if got := aws.ToString(attrs[msgauth.AttrKeyID].StringValue); got != "relay-1" {
			t.Fatalf("key id %q, want relay-1", got)
		}
	}
}
