package sources

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// MinSecretBytes is the shortest HMAC key a source may be configured with:
// 16 bytes, 128 bits. One captured delivery lets anyone test guesses of
// the key offline, so the key must be out of reach of brute force; 128 bits
// is the floor NIST SP 800-107 sets for HMAC at the 128-bit strength and
// half of what Standard Webhooks (24 to 64 bytes) and Stripe (whsec_ and
// 32 characters) hand out. An empty "whsec_" decodes to no key at all, so
// anyone could sign.
const MinSecretBytes = 16

// checkStrength refuses secrets whose key is shorter than MinSecretBytes;
// for the standard scheme the key is the base64 after "whsec_". The dlocal
// scheme is exempt: its secret is the merchant key dLocal issues (40
// characters in production), which also signs API requests; ingest cannot
// choose it, and sandboxes run with short ones. Messages name the secret's
// position, never its value.
func checkStrength(scheme string, secrets []string) error {
	if scheme == "dlocal" {
		return nil
	}
	for i, s := range secrets {
		n := len(s)
		if scheme == "standard" {
			key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
			if err != nil {
				return fmt.Errorf("secrets[%d]: not a base64 whsec_ secret", i)
			}
			n = len(key)
		}
		if n < MinSecretBytes {
			return fmt.Errorf("secrets[%d]: a key of %d bytes, want at least %d (anyone could guess it and sign)", i, n, MinSecretBytes)
		}
	}
	return nil
}

// checkSignedHeader refuses a dedupe key read from a header the scheme does
// not sign: a captured delivery could then be replayed under new ids, or
// pre-claim a future event's id. Only Standard Webhooks signs a header
// (webhook-id, with the timestamp and the body); the others sign the body
// (and a timestamp or X-Date), so their dedupe key comes from the body.
func checkSignedHeader(scheme, header string) error {
	if scheme == "standard" && strings.EqualFold(header, "webhook-id") {
		return nil
	}
	if scheme == "standard" {
		return errors.New("dedupe: the standard scheme signs only the webhook-id header; want header:webhook-id or body:<field>")
	}
	return fmt.Errorf("dedupe: the %s scheme does not sign header %s; want body:<field>", scheme, header)
}
