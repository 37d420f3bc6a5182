// Package webhooksig verifies webhook signatures over the raw body, before
// anything parses it: dLocal's V2-HMAC-SHA256, Stripe's and other
// timestamped "t=…,v1=…" headers, Standard Webhooks, and a plain HMAC-SHA256
// of the body. Every scheme accepts several secrets at once so a secret can
// be rotated without refusing deliveries, and compares in constant time.
package webhooksig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

// Reason says why a delivery was refused; it is a metric label.
type Reason string

// The reasons a signature is refused.
const (
	Missing   Reason = "missing"   // no signature header
	Malformed Reason = "malformed" // the header cannot be parsed
	Mismatch  Reason = "mismatch"  // no signature matches any secret
	Stale     Reason = "stale"     // timestamp older than the tolerance
	Future    Reason = "future"    // timestamp further ahead than the tolerance
)

// Error is a refused signature: a reason and a message safe to show the
// caller (it never contains a secret or the expected signature).
type Error struct {
	Reason Reason
	Detail string
}

func (e *Error) Error() string { return e.Detail }

func refuse(r Reason, format string, args ...any) error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Verifier checks one delivery's signature over its raw body at time now.
type Verifier interface {
	Verify(h http.Header, body []byte, now time.Time) error
}

// checkTime refuses a signed timestamp outside now ± tolerance; a zero
// tolerance turns the check off. It compares instants, not their
// difference: a Duration saturates some 292 years out, and the negation of
// the saturated minimum is itself, so a far-future timestamp once passed.
func checkTime(signed, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		return nil
	}
	switch {
	case signed.Before(now.Add(-tolerance)):
		return refuse(Stale, "signature timestamp is %s old, over the %s tolerance", now.Sub(signed).Round(time.Second), tolerance)
	case signed.After(now.Add(tolerance)):
		return refuse(Future, "signature timestamp is %s ahead, over the %s tolerance", signed.Sub(now).Round(time.Second), tolerance)
	}
	return nil
}

// hmacSHA256 returns HMAC-SHA256 of the parts, keyed with key.
func hmacSHA256(key []byte, parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write(p)
	}
	return mac.Sum(nil)
}

// anyHexMatch reports whether one of the hex signatures equals the HMAC of
// the parts under one of the secrets, comparing in constant time.
func anyHexMatch(secrets []string, signatures []string, parts ...[]byte) bool {
	for _, s := range secrets {
		want := hmacSHA256([]byte(s), parts...)
		for _, sig := range signatures {
			got, err := hex.DecodeString(sig)
			if err == nil && hmac.Equal(got, want) {
				return true
			}
		}
	}
	return false
}
