package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/webhooksig"
	"github.com/onceflow/onceflow/sandbox/mpsim"
)

const mpSecret = "mp_test_secret_0123456789"

// mpRequest is a notification request for dataID with its x-signature.
func mpRequest(dataID, requestID, signature string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/mp?type=payment&data.id="+dataID, nil)
	if requestID != "" {
		r.Header.Set("X-Request-Id", requestID)
	}
	if signature != "" {
		r.Header.Set("X-Signature", signature)
	}
	return r
}

// Vectors computed with a plain HMAC-SHA256 over the manifest Mercado Pago
// documents (it publishes none; docs/wire-mercadopago.md): an alphanumeric
// data.id is lower-cased, a part the request lacks is left out.
func TestMercadoPagoVectors(t *testing.T) {
	now := time.Unix(1704908010, 0)
	v := MercadoPago{Secrets: []string{"retired_secret_0123456789", mpSecret}}
	for _, tc := range []struct{ dataID, requestID, sig string }{
		{"123456", "bb56a2f1-6aae-46ac-982e-9dcd3581d08e", "9295441086cf5fe5e4b22313c2a7141eb828cd3e61992de39f8b2408fb7bc22f"},
		{"ABC123DEF", "r-1", "e3c811893612a664e9a85dad19287896c55a980cbef53d8aed402c51a85422a5"},
		{"", "r-1", "ce9bf54f1f5b32fdbcf3cba089e786ee39455ac0900c4c0475039f61b1da1a03"},
	} {
		if err := v.VerifyRequest(mpRequest(tc.dataID, tc.requestID, "ts=1704908010,v1="+tc.sig), nil, now); err != nil {
			t.Errorf("vector %q/%q: %v", tc.dataID, tc.requestID, err)
		}
	}
}

// Live-signed as the sandbox signs: accepted; a tampered data.id or request
// id, another secret, a missing or malformed header, and (with a
// tolerance) an old timestamp are refused with their reason.
func TestMercadoPagoRefusals(t *testing.T) {
	now := time.Now()
	ts := now.Unix()
	sig := func(secret, dataID, requestID string, at int64) string {
		return "ts=" + itoa(at) + ",v1=" + mpsim.Sign(secret, dataID, requestID, itoa(at))
	}
	v := MercadoPago{Secrets: []string{mpSecret}, Tolerance: 10 * time.Minute}
	if err := v.VerifyRequest(mpRequest("777", "req-1", sig(mpSecret, "777", "req-1", ts)), nil, now); err != nil {
		t.Fatalf("live-signed: %v", err)
	}
	for _, tc := range []struct {
		name string
		r    *http.Request
		want webhooksig.Reason
	}{
		{"tampered data.id", mpRequest("778", "req-1", sig(mpSecret, "777", "req-1", ts)), webhooksig.Mismatch},
		{"tampered request id", mpRequest("777", "req-2", sig(mpSecret, "777", "req-1", ts)), webhooksig.Mismatch},
		{"wrong secret", mpRequest("777", "req-1", sig("someone_else_0123456789", "777", "req-1", ts)), webhooksig.Mismatch},
		{"stale", mpRequest("777", "req-1", sig(mpSecret, "777", "req-1", ts-3600)), webhooksig.Stale},
		{"missing", mpRequest("777", "req-1", ""), webhooksig.Missing},
		{"malformed", mpRequest("777", "req-1", "v1=abc"), webhooksig.Malformed},
	} {
		var se *webhooksig.Error
		if err := v.VerifyRequest(tc.r, nil, now); !errors.As(err, &se) || se.Reason != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	body := []byte(`{"id":1,"type":"payment","data":{"id":"778"}}`)
	if err := v.VerifyRequest(mpRequest("777", "req-1", sig(mpSecret, "777", "req-1", ts)), body, now); err == nil {
		t.Error("a body naming another payment than the signed data.id was accepted")
	}
	if err := v.Verify(http.Header{}, nil, now); err == nil {
		t.Error("headers alone verified a Mercado Pago signature")
	}
}

// Notifications are keyed on their own id and name the payment; other
// types are kept; one without an id or with a data.id that is no id is
// refused.
func TestMercadoPagoIdentifier(t *testing.T) {
	r, err := MercadoPagoIdentifier(nil, []byte(`{"id":12345,"type":"payment","action":"payment.updated","data":{"id":"987"}}`))
	if err != nil || r.DedupeKey != "event:12345" || r.EventType != "payment" || r.EventID != "987" {
		t.Fatalf("payment notification: %+v (%v)", r, err)
	}
	if r, err := MercadoPagoIdentifier(nil, []byte(`{"id":"n-1","type":"merchant_order","data":{"id":"5"}}`)); err != nil || r.EventType != "merchant_order" {
		t.Fatalf("other type: %+v (%v)", r, err)
	}
	for _, bad := range []string{`[]`, `{"type":"payment","data":{"id":"1"}}`, `{"id":1,"type":"payment","data":{"id":"../1"}}`, `{"id":1,"type":"payment"}`} {
		if r, err := MercadoPagoIdentifier(nil, []byte(bad)); err == nil {
			t.Errorf("%s accepted as %+v", bad, r)
		}
	}
	if !strings.HasPrefix(MercadoPagoManifest("AbC", "x", "1"), "id:abc;") {
		t.Error("an alphanumeric data.id is not lower-cased")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
