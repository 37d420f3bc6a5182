package webhooksig

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/onceflow/onceflow/pkg/dlocal"
)

// The fuzz targets feed every scheme's headers arbitrary text. Whatever
// comes in, Verify must not panic, must refuse with an *Error of a known
// reason, and must never accept a timestamp outside the tolerance.

var reasons = map[Reason]bool{Missing: true, Malformed: true, Mismatch: true, Stale: true, Future: true}

// fuzzNow is the fixed clock the targets verify at.
var fuzzNow = time.Unix(1700000060, 0)

func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var se *Error
	if err != nil && (!errors.As(err, &se) || !reasons[se.Reason]) {
		t.Fatalf("refusal %v is not an *Error with a known reason", err)
	}
}

// checkWindow fails when a delivery signed at unix was accepted although it
// lies outside fuzzNow ± tolerance.
func checkWindow(t *testing.T, err error, unix int64, tolerance time.Duration) {
	t.Helper()
	if err != nil {
		return
	}
	lo, hi := fuzzNow.Add(-tolerance).Unix(), fuzzNow.Add(tolerance).Unix()
	if unix < lo || unix > hi {
		t.Fatalf("accepted timestamp %d outside [%d, %d]", unix, lo, hi)
	}
}

// FuzzTimestamped signs the fuzzed timestamp and body with the key it then
// verifies with, so parsing and the time window are both reached; the raw
// header is also verified as it comes.
func FuzzTimestamped(f *testing.F) {
	f.Add("1700000000", `{"id":"evt_test_1","object":"event"}`, "t=1700000000,v1=29ab30b7065c11b28e53ac114fac5d6c492ed811a12d11ed2c2aad5bb4cf9809")
	f.Add("1700000000", "{}", "t=1700000000,v0=abc,v1=00")
	f.Add("99999999999999", "{}", "v1=29ab")
	f.Add("-1", "", "t=,v1=,=,,")
	f.Fuzz(func(t *testing.T, ts, body, raw string) {
		v := Timestamped{Header: StripeHeader, Secrets: []string{"whsec_test_secret"}, Tolerance: 5 * time.Minute}
		checkRefusal(t, v.Verify(http.Header{StripeHeader: {raw}}, []byte(body), fuzzNow))
		sig := hexString(hmacSHA256([]byte("whsec_test_secret"), []byte(ts), []byte("."), []byte(body)))
		err := v.Verify(http.Header{StripeHeader: {"t=" + ts + ",v1=" + sig}}, []byte(body), fuzzNow)
		checkRefusal(t, err)
		unix, perr := strconv.ParseInt(ts, 10, 64)
		if err == nil && perr != nil {
			t.Fatalf("accepted timestamp %q that is not a number", ts)
		}
		checkWindow(t, err, unix, v.Tolerance)
	})
}

// FuzzStandard verifies fuzzed webhook-id, -timestamp and -signature
// headers as they come, and a signature made over the fuzzed id, time and
// body.
func FuzzStandard(f *testing.F) {
	f.Add("msg_p5jXN8AQM9LWM0D4loKWxJek", int64(1614265330), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", `{"test": 2432232314}`)
	f.Add("msg_1", int64(1700000000), "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,x v1", "{}")
	f.Add("", int64(-1), "v1,", "")
	f.Fuzz(func(t *testing.T, id string, unix int64, sig, body string) {
		const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		v, err := NewStandard([]string{secret}, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ts := strconv.FormatInt(unix, 10)
		h := http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}
		checkRefusal(t, v.Verify(h, []byte(body), fuzzNow))
		wh, _ := standardwebhooks.NewWebhook(secret)
		good, err := wh.Sign(id, time.Unix(unix, 0), []byte(body))
		if err != nil {
			return
		}
		h.Set("Webhook-Signature", good)
		err = v.Verify(h, []byte(body), fuzzNow)
		checkRefusal(t, err)
		checkWindow(t, err, unix, 5*time.Minute)
	})
}

// FuzzDLocal verifies fuzzed X-Date and Authorization headers, and a
// signature made over the fuzzed date and body with a tolerance on.
func FuzzDLocal(f *testing.F) {
	f.Add("2024-01-01T00:00:00.000Z", "V2-HMAC-SHA256, Signature: 4c91795a7629f1fb2ff9f30eb3d974e7f5b8ffd3cab4f6a2bdbb2ae084d8011b", `{"id":"D-4-test","status":"PAID"}`)
	f.Add("2023-11-14T22:14:20Z", "Bearer x", "{}")
	f.Add("", "V2-HMAC-SHA256, Signature:", "")
	f.Fuzz(func(t *testing.T, date, auth, body string) {
		v := DLocal{Login: "test_login", Secrets: []string{"test_secret_key"}, Tolerance: 5 * time.Minute}
		checkRefusal(t, v.Verify(http.Header{dlocal.HeaderDate: {date}, dlocal.HeaderAuthorization: {auth}}, []byte(body), fuzzNow))
		good := dlocal.Authorization(dlocal.Sign("test_secret_key", "test_login", date, []byte(body)))
		err := v.Verify(http.Header{dlocal.HeaderDate: {date}, dlocal.HeaderAuthorization: {good}}, []byte(body), fuzzNow)
		checkRefusal(t, err)
		if err == nil {
			at, perr := time.Parse(time.RFC3339Nano, date)
			if perr != nil {
				t.Fatalf("accepted X-Date %q that is not a time", date)
			}
			checkWindow(t, err, at.Unix(), v.Tolerance)
		}
	})
}

// FuzzHMACHex verifies a fuzzed signature header over a fuzzed body.
func FuzzHMACHex(f *testing.F) {
	f.Add("sha256=3f9a", `{"id":"evt_1"}`)
	f.Add(hexString(hmacSHA256([]byte("k2"), []byte(`{"id":"evt_1"}`))), `{"id":"evt_1"}`)
	f.Add(" sha256= ", "")
	f.Fuzz(func(t *testing.T, sig, body string) {
		v := HMACHex{Header: "X-Signature", Secrets: []string{"k1", "k2"}}
		err := v.Verify(http.Header{"X-Signature": {sig}}, []byte(body), fuzzNow)
		checkRefusal(t, err)
		if err == nil && !anyHexMatch([]string{"k1", "k2"}, []string{sig[len(sig)-64:]}, []byte(body)) {
			t.Fatalf("accepted %q, which is no HMAC of the body", sig)
		}
	})
}
