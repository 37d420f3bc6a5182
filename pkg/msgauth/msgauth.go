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
	"hash"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"sync"

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

// Key is one producer's signing key, made by ParseKey.
type Key struct {
	ID     string
	secret []byte
	macs   *sync.Pool // of *macState, keyed with secret (ParseKey)
}

// macState is a keyed HMAC and a buffer for its input, reused across
// messages: the relay signs every message it publishes.
type macState struct {
	h   hash.Hash
	buf []byte
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
	k := Key{ID: id, secret: []byte(secret)}
	k.macs = &sync.Pool{New: func() any { return &macState{h: hmac.New(sha256.New, k.secret)} }}
	return k, nil
}

// Sign returns a copy of attrs with the key's id and its signature of body
// added (Add). attrs must already hold the event's type and key attributes,
// which the signature covers.
func (k Key) Sign(body string, attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(attrs)+2)
	maps.Copy(out, attrs)
	k.Add(body, out)
	return out
}

// Add adds the key's id and its signature of body to attrs, which must
// already hold the event's type and key attributes: Sign without the copy,
// for a producer that builds a map for each message.
func (k Key) Add(body string, attrs map[string]types.MessageAttributeValue) {
	sum := k.mac(k.ID, body, attrs)
	attrs[AttrKeyID] = stringAttr(k.ID)
	attrs[AttrSignature] = stringAttr(base64.StdEncoding.EncodeToString(sum))
}

// mac is the HMAC-SHA256 of the key id, the type and event key attributes
// and the body, each length-prefixed ("<decimal length>:<bytes>") so no two
// messages share an input.
func (k Key) mac(id, body string, attrs map[string]types.MessageAttributeValue) []byte {
	m := k.macs.Get().(*macState)
	defer k.macs.Put(m)
	m.buf = m.buf[:0]
	for _, part := range [...]string{"onceflow-message-v1", id, attr(attrs, outbox.AttrType), attr(attrs, outbox.AttrEventKey), body} {
		m.buf = append(append(strconv.AppendInt(m.buf, int64(len(part)), 10), ':'), part...)
	}
	m.h.Reset()
	m.h.Write(m.buf)
	return m.h.Sum(make([]byte, 0, sha256.Size))
}

func attr(attrs map[string]types.MessageAttributeValue, name string) string {
	return aws.ToString(attrs[name].StringValue)
}

func stringAttr(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}
