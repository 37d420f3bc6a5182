// Package dlocal holds the request and notification signing scheme of dLocal's
// Payins API (V2-HMAC-SHA256), shared by the PSP client, the webhook verifier
// and the PSP sandbox.
package dlocal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// Header names used by dLocal requests and notifications.
const (
	HeaderDate          = "X-Date"
	HeaderLogin         = "X-Login"
	HeaderTransKey      = "X-Trans-Key"
	HeaderVersion       = "X-Version"
	HeaderAuthorization = "Authorization"
)

// DateLayout is the X-Date format: UTC with milliseconds.
const DateLayout = "2006-01-02T15:04:05.000Z"

const authPrefix = "V2-HMAC-SHA256, Signature: "

// Errors returned by Verify.
var (
	ErrMissingSignature = errors.New("missing V2-HMAC-SHA256 signature")
	ErrBadSignature     = errors.New("signature does not match")
)

// FormatDate renders t as an X-Date header value.
func FormatDate(t time.Time) string { return t.UTC().Format(DateLayout) }

// Sign returns the lowercase hex HMAC-SHA256 of login + xDate + body keyed with secret.
func Sign(secret, login, xDate string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(login))
	mac.Write([]byte(xDate))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Authorization returns the Authorization header value carrying signature.
func Authorization(signature string) string { return authPrefix + signature }

// Verify checks an Authorization header against login + xDate + body in
// constant time. It returns ErrMissingSignature when the header does not carry
// a V2-HMAC-SHA256 signature and ErrBadSignature when it does not match.
func Verify(secret, login, xDate string, body []byte, authorization string) error {
	got, ok := strings.CutPrefix(strings.TrimSpace(authorization), authPrefix)
	if !ok || got == "" {
		return ErrMissingSignature
	}
	want := Sign(secret, login, xDate, body)
	if !hmac.Equal([]byte(strings.ToLower(got)), []byte(want)) {
		return ErrBadSignature
	}
	return nil
}
