// Package msgauth signs the messages a producer sends on a queue and
// verifies them where they are consumed, so a consumer acts only on messages
// a producer it trusts has sent (docs/security.md). A producer holds one
// Key (an id and a secret) and adds two SQS message attributes: the key's id
// and an HMAC-SHA256, under the key's secret, over the key id, the event's
// type and key attributes and the exact body. A consumer holds a Keyset, the
// keys of every producer it trusts (several per producer while one is
// rotated), and refuses a message whose signature is missing, names a key it
// does not hold, or does not match.
package msgauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/onceflow/onceflow/pkg/outbox"
)

// Message attributes a signed message carries.
const (
	AttrKeyID     = "onceflow_key_id"
	AttrSignature = "onceflow_signature"
)

// MinSecretBytes is the shortest secret a key may have: 128 bits, out of
// reach of an offline guess from one captured message.
const MinSecretBytes = 16

// Reasons a message is refused; they label the consumer's metric.
const (
	ReasonUnsigned     = "unsigned"
	ReasonUnknownKey   = "unknown_key"
	ReasonBadSignature = "bad_signature"
)

// Refused is the error Verify returns for a message it does not trust.
type Refused struct {
	Reason string // one of the Reason constants
	KeyID  string // the key id the message named, if any
}

func (r *Refused) Error() string {
	if r.KeyID == "" {
		return "untrusted message: " + r.Reason
	}
	return fmt.Sprintf("untrusted message: %s (key id %q)", r.Reason, r.KeyID)
}

// Key is one producer's signing key.
type Key struct {
	ID     string
	secret []byte
}

var keyID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ParseKey parses "id:secret": an id of letters, digits, ".", "_" and "-"
// (at most 64) and a secret of at least MinSecretBytes bytes. Errors never
// hold the secret.
func ParseKey(s string) (Key, error) {
	id, secret, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || !keyID.MatchString(id) {
		return Key{}, errors.New("want id:secret, the id of letters, digits, '.', '_' and '-' (at most 64)")
	}
	if len(secret) < MinSecretBytes {
		return Key{}, fmt.Errorf("key %q: a secret of %d bytes, want at least %d", id, len(secret), MinSecretBytes)
	}
	return Key{ID: id, secret: []byte(secret)}, nil
}

// Sign returns attrs with the key's id and its signature of body added.
// attrs must already hold the event's type and key attributes, which the
// signature covers.
func (k Key) Sign(body string, attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(attrs)+2)
	for name, v := range attrs {
		out[name] = v
	}
	out[AttrKeyID] = stringAttr(k.ID)
	out[AttrSignature] = stringAttr(base64.StdEncoding.EncodeToString(mac(k.secret, k.ID, body, attrs)))
	return out
}

// mac is the HMAC-SHA256 of the key id, the type and event key attributes
// and the body, each length-prefixed so no two messages share an input.
func mac(secret []byte, id, body string, attrs map[string]types.MessageAttributeValue) []byte {
	h := hmac.New(sha256.New, secret)
	for _, part := range []string{"onceflow-message-v1", id, attr(attrs, outbox.AttrType), attr(attrs, outbox.AttrEventKey), body} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	return h.Sum(nil)
}

func attr(attrs map[string]types.MessageAttributeValue, name string) string {
	return aws.ToString(attrs[name].StringValue)
}

func stringAttr(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}
