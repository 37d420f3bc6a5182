package msgauth

import (
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Keyset is the keys a consumer trusts, by id.
type Keyset struct {
	keys map[string]Key
}

// ParseKeyset parses a comma-separated list of "id:secret" keys (ParseKey),
// each id once. An empty list is an empty Keyset, which trusts nothing.
// Errors name the key's position or id, never a secret.
func ParseKeyset(s string) (Keyset, error) {
	ks := Keyset{keys: map[string]Key{}}
	for i, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, err := ParseKey(part)
		if err != nil {
			return Keyset{}, fmt.Errorf("key %d: %w", i+1, err)
		}
		if _, dup := ks.keys[k.ID]; dup {
			return Keyset{}, fmt.Errorf("key %d: id %q is listed twice", i+1, k.ID)
		}
		ks.keys[k.ID] = k
	}
	return ks, nil
}

// Len is the number of keys.
func (ks Keyset) Len() int { return len(ks.keys) }

// IDs returns the key ids, sorted, for a log line.
func (ks Keyset) IDs() []string {
	ids := make([]string, 0, len(ks.keys))
	for id := range ks.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Verify returns nil when attrs carry a signature of body by a key of the
// set, and otherwise a *Refused saying why.
func (ks Keyset) Verify(body string, attrs map[string]types.MessageAttributeValue) error {
	id, sig := attr(attrs, AttrKeyID), attr(attrs, AttrSignature)
	if id == "" || sig == "" {
		return &Refused{Reason: ReasonUnsigned}
	}
	k, ok := ks.keys[id]
	if !ok {
		return &Refused{Reason: ReasonUnknownKey, KeyID: id}
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, k.mac(id, body, attrs)) {
		return &Refused{Reason: ReasonBadSignature, KeyID: id}
	}
	return nil
}
