package webhooksig

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StripeHeader is the header Stripe signs with.
const StripeHeader = "Stripe-Signature"

// Timestamped verifies a "t=<unix>,v1=<hex>[,v1=<hex>…]" header: HMAC-SHA256
// keyed with the secret string as-is over "<t>.<body>". Stripe uses it under
// Stripe-Signature; other senders (Factuarea-Signature, Convoy's advanced
// signatures) under their own header name. Any v1 may match any secret;
// other keys (v0, …) are ignored.
type Timestamped struct {
	Header    string
	Secrets   []string
	Tolerance time.Duration
}

// Verify implements Verifier.
func (v Timestamped) Verify(h http.Header, body []byte, now time.Time) error {
	value := h.Get(v.Header)
	if value == "" {
		return refuse(Missing, "want a %s header", v.Header)
	}
	ts, sigs, err := parseTimestamped(value)
	if err != nil {
		return err
	}
	if !anyHexMatch(v.Secrets, sigs, []byte(ts), []byte("."), body) {
		return refuse(Mismatch, "no v1 signature in %s matches", v.Header)
	}
	unix, _ := strconv.ParseInt(ts, 10, 64)
	return checkTime(time.Unix(unix, 0), now, v.Tolerance)
}

func parseTimestamped(value string) (ts string, sigs []string, err error) {
	for part := range strings.SplitSeq(value, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = val
		case "v1":
			sigs = append(sigs, val)
		}
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil || len(sigs) == 0 {
		return "", nil, refuse(Malformed, "want t=<unix seconds>,v1=<hex>")
	}
	return ts, sigs, nil
}

// HMACHex verifies a plain HMAC-SHA256 of the body in lowercase hex, carried
// in Header, optionally prefixed "sha256=". It has no timestamp, so a
// captured delivery can be replayed; dedupe by event id makes that harmless.
type HMACHex struct {
	Header  string
	Secrets []string
}

// Verify implements Verifier.
func (v HMACHex) Verify(h http.Header, body []byte, _ time.Time) error {
	value := strings.TrimPrefix(strings.TrimSpace(h.Get(v.Header)), "sha256=")
	if value == "" {
		return refuse(Missing, "want a %s header", v.Header)
	}
	if !anyHexMatch(v.Secrets, []string{value}, body) {
		return refuse(Mismatch, "%s does not match", v.Header)
	}
	return nil
}
