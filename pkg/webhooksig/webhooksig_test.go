package webhooksig

import (
	"errors"
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/onceflow/onceflow/pkg/dlocal"
)

type vector struct {
	name   string
	header http.Header
	body   string
	now    time.Time
	want   Reason // "" means accepted
}

func run(t *testing.T, v Verifier, vectors []vector) {
	t.Helper()
	for _, tc := range vectors {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Verify(tc.header, []byte(tc.body), tc.now)
			var se *Error
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused a valid delivery: %v", err)
			case tc.want != "" && !errors.As(err, &se):
				t.Fatalf("got %v, want a %s refusal", err, tc.want)
			case tc.want != "" && se.Reason != tc.want:
				t.Fatalf("refused for %s (%v), want %s", se.Reason, err, tc.want)
			}
		})
	}
}

// docs/wire-dlocal.md, "Test vector": a computed vector, since dLocal publishes none.
func TestDLocal(t *testing.T) {
	const body = `{"id":"D-4-test","status":"PAID"}`
	date := "2024-01-01T00:00:00.000Z"
	signed := func(sig string) http.Header {
		return http.Header{"X-Date": {date}, "Authorization": {"V2-HMAC-SHA256, Signature: " + sig}}
	}
	good := "4c91795a7629f1fb2ff9f30eb3d974e7f5b8ffd3cab4f6a2bdbb2ae084d8011b"
	at := time.Date(2024, 1, 1, 0, 1, 0, 0, time.UTC)
	v := DLocal{Login: "test_login", Secrets: []string{"old_secret", "test_secret_key"}}
	run(t, v, []vector{
		{"published vector, second secret", signed(good), body, at, ""},
		{"signed by the package's own Sign", signed(dlocal.Sign("old_secret", "test_login", date, []byte(body))), body, at, ""},
		{"tampered body", signed(good), `{"id":"D-4-test","status":"PAID "}`, at, Mismatch},
		{"tampered signature", signed("5" + good[1:]), body, at, Mismatch},
		{"no headers", http.Header{}, body, at, Missing},
		{"other scheme", http.Header{"X-Date": {date}, "Authorization": {"Bearer x"}}, body, at, Malformed},
		{"old X-Date accepted with tolerance off", signed(good), body, at.Add(24 * time.Hour), ""},
	})
	v.Tolerance = 5 * time.Minute
	run(t, v, []vector{
		{"within tolerance", signed(good), body, at, ""},
		{"stale", signed(good), body, at.Add(time.Hour), Stale},
		{"future", signed(good), body, at.Add(-time.Hour), Future},
	})
}

// docs/webhook-signatures.md, Stripe: computed with stripe-go v82.5.1; and live signatures from
// stripe-go's GenerateTestSignedPayload.
func TestStripe(t *testing.T) {
	const body = `{"id":"evt_test_1","object":"event"}`
	const vectorHeader = "t=1700000000,v1=29ab30b7065c11b28e53ac114fac5d6c492ed811a12d11ed2c2aad5bb4cf9809"
	at := time.Unix(1700000000, 0).Add(time.Minute)
	h := func(v string) http.Header { return http.Header{StripeHeader: {v}} }
	v := Timestamped{Header: StripeHeader, Secrets: []string{"whsec_test_secret"}, Tolerance: 5 * time.Minute}
	now := time.Now()
	live := func(ts time.Time, secret string) http.Header {
		return h(webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: secret, Timestamp: ts}).Header)
	}
	zero := "v1=0000000000000000000000000000000000000000000000000000000000000000"
	run(t, v, []vector{
		{"published vector", h(vectorHeader), body, at, ""},
		{"extra zero v1 before the right one", h("t=1700000000," + zero + ",v1=29ab30b7065c11b28e53ac114fac5d6c492ed811a12d11ed2c2aad5bb4cf9809"), body, at, ""},
		{"v0 ignored", h("t=1700000000,v0=abc," + zero[0:3] + "29ab30b7065c11b28e53ac114fac5d6c492ed811a12d11ed2c2aad5bb4cf9809"), body, at, ""},
		{"stale vector", h(vectorHeader), body, time.Unix(1700000000, 0).Add(301 * time.Second), Stale},
		{"future vector", h(vectorHeader), body, time.Unix(1700000000, 0).Add(-301 * time.Second), Future},
		{"tampered body", h(vectorHeader), `{"id":"evt_test_2","object":"event"}`, at, Mismatch},
		{"tampered timestamp", h("t=1700000001,v1=29ab30b7065c11b28e53ac114fac5d6c492ed811a12d11ed2c2aad5bb4cf9809"), body, at, Mismatch},
		{"live signature", live(now, "whsec_test_secret"), body, now, ""},
		{"live signature, other secret", live(now, "whsec_other"), body, now, Mismatch},
		{"live but stale", live(now.Add(-10*time.Minute), "whsec_test_secret"), body, now, Stale},
		{"live but future", live(now.Add(10*time.Minute), "whsec_test_secret"), body, now, Future},
		{"missing header", http.Header{}, body, at, Missing},
		{"no v1", h("t=1700000000"), body, at, Malformed},
		{"no t", h("v1=29ab"), body, at, Malformed},
	})
	rotated := Timestamped{Header: StripeHeader, Secrets: []string{"whsec_new", "whsec_test_secret"}, Tolerance: 5 * time.Minute}
	run(t, rotated, []vector{{"old secret during rotation", h(vectorHeader), body, at, ""}})
}

// A Factuarea-style header: the same scheme under another name (docs/webhook-signatures.md).
func TestTimestampedCustomHeader(t *testing.T) {
	const body = `{"id":"01a0e783-aae8-7c2d-9f15-2b7d4e6a8c31","type":"invoice.sent"}`
	now := time.Unix(1790590562, 0)
	sig := webhook.ComputeSignature(now, []byte(body), "fa_secret")
	header := http.Header{"Factuarea-Signature": {"t=1790590562,v1=" + hexString(sig)}}
	v := Timestamped{Header: "Factuarea-Signature", Secrets: []string{"fa_secret"}, Tolerance: 5 * time.Minute}
	run(t, v, []vector{
		{"valid", header, body, now, ""},
		{"under the Stripe header name it is missing", http.Header{StripeHeader: header["Factuarea-Signature"]}, body, now, Missing},
		{"stale", header, body, now.Add(6 * time.Minute), Stale},
	})
}

// docs/webhook-signatures.md, Standard Webhooks: the vectors published in its repository,
// plus live signatures from its Go library.
func TestStandardWebhooks(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	const body = `{"test": 2432232314}`
	const good = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	ts := time.Unix(1614265330, 0)
	h := func(sig, tsv string) http.Header {
		return http.Header{"Webhook-Id": {"msg_p5jXN8AQM9LWM0D4loKWxJek"}, "Webhook-Timestamp": {tsv}, "Webhook-Signature": {sig}}
	}
	v, err := NewStandard([]string{"whsec_b3RoZXItc2VjcmV0LW9mLTI0LWJ5dGVzLW9yLW1vcmU=", secret}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other := "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
	wh, _ := standardwebhooks.NewWebhook(secret)
	now := time.Now()
	liveSig, _ := wh.Sign("msg_live", now, []byte(body))
	live := http.Header{"Webhook-Id": {"msg_live"}, "Webhook-Timestamp": {itoa(now.Unix())}, "Webhook-Signature": {liveSig}}
	run(t, v, []vector{
		{"published vector", h(good, "1614265330"), body, ts, ""},
		{"published multi-signature header", h(other+" v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= "+good+" "+other, "1614265330"), body, ts, ""},
		{"published tampered signature", h("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLawdd", "1614265330"), body, ts, Mismatch},
		{"tampered body", h(good, "1614265330"), `{"test": 2432232315}`, ts, Mismatch},
		{"stale", h(good, "1614265330"), body, ts.Add(6 * time.Minute), Stale},
		{"future", h(good, "1614265330"), body, ts.Add(-6 * time.Minute), Future},
		{"live signature", live, body, now, ""},
		{"missing headers", http.Header{}, body, ts, Missing},
		{"bad timestamp", h(good, "yesterday"), body, ts, Malformed},
	})
	if _, err := NewStandard([]string{"whsec_not base64!"}, time.Minute); err == nil {
		t.Fatal("a secret that is not base64 was accepted")
	}
}

func TestHMACHex(t *testing.T) {
	const body = `{"id":"evt_1"}`
	sig := hexString(hmacSHA256([]byte("k2"), []byte(body)))
	v := HMACHex{Header: "X-Signature", Secrets: []string{"k1", "k2"}}
	run(t, v, []vector{
		{"valid", http.Header{"X-Signature": {sig}}, body, time.Now(), ""},
		{"valid with sha256= prefix", http.Header{"X-Signature": {"sha256=" + sig}}, body, time.Now(), ""},
		{"tampered", http.Header{"X-Signature": {sig}}, body + " ", time.Now(), Mismatch},
		{"missing", http.Header{}, body, time.Now(), Missing},
	})
}
