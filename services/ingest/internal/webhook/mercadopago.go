package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/onceflow/onceflow/pkg/webhooksig"
)

// RequestVerifier is a verifier that reads the whole request, not only its
// headers: Mercado Pago signs the data.id query parameter.
type RequestVerifier interface {
	VerifyRequest(r *http.Request, body []byte, now time.Time) error
}

// MercadoPago verifies Mercado Pago's x-signature (docs/wire-mercadopago.md):
// "ts=<ts>,v1=<hex>", the hex HMAC-SHA256, keyed with the webhook secret,
// of the manifest "id:<data.id>;request-id:<x-request-id>;ts:<ts>;", where
// data.id is the query parameter (lower-cased when alphanumeric) and a part
// the request lacks is left out. The body is not signed: the worker
// re-fetches the payment anyway. Mercado Pago documents no timestamp
// tolerance; a positive Tolerance checks ts (seconds, or milliseconds when
// it has 13 digits or more).
type MercadoPago struct {
	Secrets   []string
	Tolerance time.Duration
}

// Verify implements webhooksig.Verifier; the signature covers the URL, so
// headers alone never verify.
func (m MercadoPago) Verify(http.Header, []byte, time.Time) error {
	return &webhooksig.Error{Reason: webhooksig.Malformed, Detail: "mercado pago signatures cover the request URL"}
}

// VerifyRequest implements RequestVerifier.
// The body's data.id, which names the payment the worker re-fetches, must
// be the signed one.
func (m MercadoPago) VerifyRequest(r *http.Request, body []byte, now time.Time) error {
	value := r.Header.Get("X-Signature")
	if value == "" {
		return &webhooksig.Error{Reason: webhooksig.Missing, Detail: "want an x-signature header"}
	}
	ts, sigs := "", []string{}
	for part := range strings.SplitSeq(value, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "ts":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return &webhooksig.Error{Reason: webhooksig.Malformed, Detail: "want x-signature: ts=<timestamp>,v1=<hex>"}
	}
	dataID := r.URL.Query().Get("data.id")
	manifest := MercadoPagoManifest(dataID, r.Header.Get("X-Request-Id"), ts)
	if !matches(m.Secrets, sigs, manifest) {
		return &webhooksig.Error{Reason: webhooksig.Mismatch, Detail: "no v1 signature in x-signature matches"}
	}
	if inBody := jsonText(gjson.GetBytes(body, "data.id")); inBody != "" && !strings.EqualFold(inBody, dataID) {
		return &webhooksig.Error{Reason: webhooksig.Mismatch, Detail: "the body's data.id is not the signed one"}
	}
	return checkAge(unix, now, m.Tolerance)
}

// MercadoPagoManifest is the text Mercado Pago signs for a notification.
func MercadoPagoManifest(dataID, requestID, ts string) string {
	var b strings.Builder
	if dataID != "" {
		if isAlphanumeric(dataID) {
			dataID = strings.ToLower(dataID)
		}
		b.WriteString("id:" + dataID + ";")
	}
	if requestID != "" {
		b.WriteString("request-id:" + requestID + ";")
	}
	if ts != "" {
		b.WriteString("ts:" + ts + ";")
	}
	return b.String()
}

func isAlphanumeric(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) < 0
}

// matches reports whether a hex signature is the manifest's HMAC under a
// secret, in constant time.
func matches(secrets, sigs []string, manifest string) bool {
	for _, s := range secrets {
		mac := hmac.New(sha256.New, []byte(s))
		mac.Write([]byte(manifest))
		want := mac.Sum(nil)
		for _, sig := range sigs {
			if got, err := hex.DecodeString(sig); err == nil && hmac.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

// checkAge refuses ts outside now ± tolerance (none when 0).
func checkAge(ts int64, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		return nil
	}
	signed := time.Unix(ts, 0)
	if ts >= 1e12 {
		signed = time.UnixMilli(ts)
	}
	switch {
	case signed.Before(now.Add(-tolerance)):
		return &webhooksig.Error{Reason: webhooksig.Stale, Detail: "x-signature timestamp is older than the tolerance"}
	case signed.After(now.Add(tolerance)):
		return &webhooksig.Error{Reason: webhooksig.Future, Detail: "x-signature timestamp is further ahead than the tolerance"}
	}
	return nil
}

// MercadoPagoIdentifier keys a Mercado Pago notification on its own id
// (the body's "id"; its retries carry the same) and names the payment to
// re-fetch (data.id) for type payment. Other types are kept under their
// own type, which the worker does not apply.
func MercadoPagoIdentifier(_ http.Header, body []byte) (Receipt, error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return Receipt{}, errors.New("body is not a JSON object")
	}
	f := gjson.GetManyBytes(body, "id", "type", "data.id")
	id, typ, dataID := jsonText(f[0]), stringValue(f[1]), jsonText(f[2])
	if id == "" || len(id) > maxIDLength || !storable(id) || typ == "" || !storable(typ) {
		return Receipt{}, errors.New("body lacks the notification's id or type")
	}
	rec := Receipt{DedupeKey: "event:" + id, EventID: id, EventType: clip(typ, maxTypeLength)}
	if typ != "payment" {
		return rec, nil
	}
	if dataID == "" || len(dataID) > maxIDLength || !isAlphanumeric(dataID) {
		return Receipt{}, errors.New("data.id: want the payment's id")
	}
	rec.EventType, rec.EventID = "payment", dataID
	return rec, nil
}

// jsonText is r's text when r is a JSON string or number (Mercado Pago
// sends ids as both).
func jsonText(r gjson.Result) string {
	if r.Type == gjson.Number {
		return r.Raw
	}
	return stringValue(r)
}
