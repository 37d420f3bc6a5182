package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzStripeIdentifier keys fuzzed Stripe event bodies: whatever it
// accepts is a receipt PostgreSQL stores.
func FuzzStripeIdentifier(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"object":"payment_intent","id":"pi_1"}}}`))
	f.Add([]byte(`{"id":"evt_2","type":"charge.refunded","data":{"object":{"object":"charge","id":"ch_1","payment_intent":"pi_1"}}}`))
	f.Add([]byte(`{"id":"evt_3","type":"refund.updated","related_object":{"type":"refund","id":"re_1"}}`))
	f.Add([]byte(`{"id":"evt_4","type":"charge.dispute.created","data":{"object":{"object":"dispute","payment_intent":"pi/../x"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := StripeIdentifier(nil, body)
		if err != nil || !utf8.Valid(body) {
			return
		}
		checkReceipt(t, r)
	})
}

// FuzzMercadoPagoIdentifier keys fuzzed Mercado Pago notification bodies.
func FuzzMercadoPagoIdentifier(f *testing.F) {
	f.Add([]byte(`{"id":12345,"type":"payment","action":"payment.updated","data":{"id":"987"}}`))
	f.Add([]byte(`{"id":"n-1","type":"merchant_order","data":{"id":"5"}}`))
	f.Add([]byte(`{"id":1e400,"type":"payment","data":{"id":98.7}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := MercadoPagoIdentifier(nil, body)
		if err != nil || !utf8.Valid(body) {
			return
		}
		checkReceipt(t, r)
	})
}

// FuzzMercadoPagoSignature verifies fuzzed x-signature headers, data.id
// query parameters, request ids and bodies: a request it accepts carries a
// v1 that is the manifest's HMAC under the secret, and names in its body
// no other payment than the signed one.
func FuzzMercadoPagoSignature(f *testing.F) {
	const secret = mpSecret
	sign := func(dataID, requestID, ts string) string {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(MercadoPagoManifest(dataID, requestID, ts)))
		return "ts=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
	}
	f.Add("123456", "bb56a2f1-6aae-46ac-982e-9dcd3581d08e", sign("123456", "bb56a2f1-6aae-46ac-982e-9dcd3581d08e", "1704908010"), []byte(`{"data":{"id":"123456"}}`))
	f.Add("ABC123DEF", "r-1", sign("ABC123DEF", "r-1", "1704908010"), []byte(`{"data":{"id":"abc123def"}}`))
	f.Add("", "r-1", "ts=1704908010,v1=zz,v1=", []byte(nil))
	f.Add("1;request-id:x", "", "ts=,v1=00", []byte(`{"data":{"id":1}}`))
	v := MercadoPago{Secrets: []string{secret}}
	now := time.Unix(1704908010, 0)
	f.Fuzz(func(t *testing.T, dataID, requestID, signature string, body []byte) {
		r, err := http.NewRequest(http.MethodPost, "/webhooks/mp?type=payment&data.id="+url.QueryEscape(dataID), nil)
		if err != nil {
			return
		}
		r.Header.Set("X-Request-Id", requestID)
		r.Header.Set("X-Signature", signature)
		if v.VerifyRequest(r, body, now) != nil {
			return
		}
		ts := ""
		for part := range strings.SplitSeq(r.Header.Get("X-Signature"), ",") {
			if k, val, _ := strings.Cut(strings.TrimSpace(part), "="); k == "ts" {
				ts = val
			}
		}
		want := sign(r.URL.Query().Get("data.id"), r.Header.Get("X-Request-Id"), ts)
		if !strings.Contains(strings.ToLower(r.Header.Get("X-Signature")), want[strings.Index(want, "v1="):]) {
			t.Fatalf("accepted %q for data.id %q, request id %q: no v1 is the manifest's HMAC", signature, dataID, requestID)
		}
	})
}
