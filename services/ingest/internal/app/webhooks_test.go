package app_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/onceflow/onceflow/pkg/dlocal"
	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/outbox"
)

const (
	stripeSecret   = "whsec_test_secret"
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	providerSecret = "whsec_cHJvdmlkZXItc2VjcmV0LW9mLTI0LWJ5dGVz"
	companySecret  = "fa_company_secret"
	accountSecret  = "fa_account_secret"
	plainSecret    = "plain-secret-of-24-bytes"
)

// sourcesFile is every scheme at once; the two Factuarea endpoints share a
// dedupe scope, as one sender reaching two endpoints.
const sourcesFile = `
sources:
  - {name: dlocal, kind: psp, scheme: dlocal, login: env:DLOCAL_LOGIN, secrets: [retired-secret, env:DLOCAL_SECRET_KEY]}
  - {name: stripe, kind: generic, scheme: stripe, secrets: [` + stripeSecret + `]}
  - {name: standard, kind: generic, scheme: standard, secrets: [` + standardSecret + `]}
  - {name: factuarea-company, kind: generic, scheme: timestamped, header: Factuarea-Signature,
     secrets: [` + companySecret + `], dedupe: "body:id", dedupe_scope: factuarea}
  - {name: factuarea-account, kind: generic, scheme: timestamped, header: Factuarea-Signature,
     secrets: [` + accountSecret + `], dedupe: "body:id", dedupe_scope: factuarea}
  - {name: plain, kind: generic, scheme: hmac_sha256, header: X-Signature, secrets: [` + plainSecret + `], max_body_bytes: 2048}
  - {name: invoicy, kind: fiscal_provider, scheme: standard, secrets: [` + providerSecret + `]}
`

func startWithSources(t *testing.T, extra ...string) *env {
	path := filepath.Join(t.TempDir(), "sources.yaml")
	if err := os.WriteFile(path, []byte(sourcesFile), 0o600); err != nil {
		t.Fatal(err)
	}
	return start(t, append([]string{"INGEST_WEBHOOK_SOURCES_FILE", path}, extra...)...)
}

// deliver posts body to /webhooks/{source} with the headers, as JSON.
func (e *env) deliver(source string, body []byte, h http.Header) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.ingest+"/webhooks/"+source, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header[k] = v
	}
	return e.do(req)
}

func stripeSigned(body []byte, secret string, at time.Time) http.Header {
	p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
	return http.Header{"Stripe-Signature": {p.Header}}
}

func standardSigned(t *testing.T, body []byte, secret, id string, at time.Time) http.Header {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(at.Unix(), 10)}, "Webhook-Signature": {sig}}
}

func factuareaSigned(body []byte, secret, eventID string, at time.Time) http.Header {
	sig := hex.EncodeToString(webhook.ComputeSignature(at, body, secret))
	return http.Header{"Factuarea-Signature": {"t=" + strconv.FormatInt(at.Unix(), 10) + ",v1=" + sig},
		"Factuarea-Event-Id": {eventID}, "Factuarea-Delivery-Id": {"dlv-" + strconv.FormatInt(at.UnixNano(), 10)}}
}

func plainSigned(body []byte, secret string) http.Header {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return http.Header{"X-Signature": {hex.EncodeToString(mac.Sum(nil))}}
}

func dlocalSigned(body []byte, secret string, at time.Time) http.Header {
	date := dlocal.FormatDate(at)
	return http.Header{dlocal.HeaderDate: {date}, dlocal.HeaderAuthorization: {dlocal.Authorization(dlocal.Sign(secret, login, date, body))}}
}

// Every scheme accepts a valid delivery, answers a redelivery 200 without a
// second receipt, and refuses tampered, stale and future ones with 401
// storing nothing.
func TestEverySchemeAcceptsValidAndRefusesForged(t *testing.T) {
	t.Parallel()
	e := startWithSources(t)
	now := time.Now()
	stripeBody := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid"}`)
	standardBody := []byte(`{"type":"thing.happened","data":{"n":1}}`)
	faBody := []byte(`{"id":"01a0e783-aae8-7c2d-9f15-2b7d4e6a8c31","type":"invoice.sent"}`)
	plainBody := []byte(`{"id":"p-1","type":"ping"}`)
	dlBody := []byte(`{"id":"D-4-unknown","status":"PENDING"}`)
	type delivery struct {
		name, source string
		body         []byte
		h            http.Header
	}
	valid := []delivery{
		{"stripe", "stripe", stripeBody, stripeSigned(stripeBody, stripeSecret, now)},
		{"standard webhooks", "standard", standardBody, standardSigned(t, standardBody, standardSecret, "msg_1", now)},
		{"timestamped header", "factuarea-company", faBody, factuareaSigned(faBody, companySecret, "01a0e783-aae8-7c2d-9f15-2b7d4e6a8c31", now)},
		{"plain hmac", "plain", plainBody, plainSigned(plainBody, plainSecret)},
		{"dlocal, current secret of two", "dlocal", dlBody, dlocalSigned(dlBody, secret, now)},
	}
	for _, d := range valid {
		for _, want := range []string{"accepted", "duplicate"} {
			if code, body := e.deliver(d.source, d.body, d.h); code != http.StatusOK || !strings.Contains(body, want) {
				t.Fatalf("%s: got %d %s, want 200 %s", d.name, code, body, want)
			}
		}
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts"); n != len(valid) {
		t.Fatalf("receipts = %d, want %d (one per event)", n, len(valid))
	}

	old, ahead := now.Add(-10*time.Minute), now.Add(10*time.Minute)
	forged := []delivery{
		{"stripe tampered", "stripe", []byte(`{"id":"evt_2","object":"event"}`), stripeSigned(stripeBody, stripeSecret, now)},
		{"stripe other secret", "stripe", stripeBody, stripeSigned(stripeBody, "whsec_other", now)},
		{"stripe stale", "stripe", stripeBody, stripeSigned(stripeBody, stripeSecret, old)},
		{"stripe future", "stripe", stripeBody, stripeSigned(stripeBody, stripeSecret, ahead)},
		{"standard tampered", "standard", []byte(`{"type":"thing.happened","data":{"n":2}}`), standardSigned(t, standardBody, standardSecret, "msg_2", now)},
		{"standard stale", "standard", standardBody, standardSigned(t, standardBody, standardSecret, "msg_3", old)},
		{"standard future", "standard", standardBody, standardSigned(t, standardBody, standardSecret, "msg_4", ahead)},
		{"timestamped other endpoint's secret", "factuarea-company", faBody, factuareaSigned(faBody, accountSecret, "e-2", now)},
		{"timestamped stale", "factuarea-company", faBody, factuareaSigned(faBody, companySecret, "e-3", old)},
		{"timestamped future", "factuarea-company", faBody, factuareaSigned(faBody, companySecret, "e-4", ahead)},
		{"plain tampered", "plain", []byte(`{"id":"p-2"}`), plainSigned(plainBody, plainSecret)},
		{"dlocal tampered", "dlocal", []byte(`{"id":"D-4-unknown","status":"PAID"}`), dlocalSigned(dlBody, secret, now)},
		{"dlocal unknown secret", "dlocal", dlBody, dlocalSigned(dlBody, "guess", now)},
	}
	for _, d := range forged {
		if code, body := e.deliver(d.source, d.body, d.h); code != http.StatusUnauthorized || !strings.Contains(body, `"code":"invalid_signature"`) {
			t.Errorf("%s: got %d %s, want 401 invalid_signature", d.name, code, body)
		}
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts"); n != len(valid) {
		t.Fatalf("forged deliveries stored receipts: %d, want %d", n, len(valid))
	}
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 0 {
		t.Fatalf("generic events reached the outbox: %d rows", n)
	}
}

// One event reaching two endpoints (each with its own secret, delivery id
// and signature) is one receipt: dedupe is by event id within a scope.
func TestSameEventThroughTwoEndpointsIsOneReceipt(t *testing.T) {
	t.Parallel()
	e := startWithSources(t)
	body := []byte(`{"id":"01a0e783-aae8-7c2d-9f15-2b7d4e6a8c31","type":"invoice.sent"}`)
	const id = "01a0e783-aae8-7c2d-9f15-2b7d4e6a8c31"
	for _, d := range []struct{ source, secret, want string }{
		{"factuarea-company", companySecret, "accepted"},
		{"factuarea-account", accountSecret, "duplicate"},
		{"factuarea-company", companySecret, "duplicate"},
	} {
		code, got := e.deliver(d.source, body, factuareaSigned(body, d.secret, id, time.Now()))
		if code != http.StatusOK || !strings.Contains(got, d.want) {
			t.Fatalf("%s: got %d %s, want 200 %s", d.source, code, got, d.want)
		}
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1", id); n != 1 {
		t.Fatalf("receipts = %d, want 1", n)
	}
	// Two different events about the same invoice stay two receipts.
	other := []byte(`{"id":"01a0e783-ffff-7c2d-9f15-2b7d4e6a8c31","type":"invoice.paid"}`)
	if code, got := e.deliver("factuarea-account", other, factuareaSigned(other, accountSecret, "01a0e783-ffff-7c2d-9f15-2b7d4e6a8c31", time.Now())); code != http.StatusOK || !strings.Contains(got, "accepted") {
		t.Fatalf("second event: %d %s", code, got)
	}
}

func TestBadWebhooksAreRefusedAndStoreNothing(t *testing.T) {
	t.Parallel()
	e := startWithSources(t)
	now := time.Now()
	body := []byte(`{"id":"D-1","status":"PAID"}`)
	big := []byte(`{"id":"p-big","pad":"` + strings.Repeat("x", 4096) + `"}`)
	latin1 := []byte("{\"id\":\"p-\xe9t\xe9\"}") // ISO-8859-1, not UTF-8
	nul := []byte(`{"id":"p-\u0000"}`)
	tests := []struct {
		name, source string
		body         []byte
		header       http.Header
		ctype        string
		want         int
		code         string
	}{
		{"unknown source", "nope", body, dlocalSigned(body, secret, now), "", 404, "unknown_source"},
		{"unsigned", "dlocal", body, nil, "", 401, "invalid_signature"},
		{"bad signature", "dlocal", body, http.Header{dlocal.HeaderDate: {"2024-01-01T00:00:00.000Z"}, dlocal.HeaderAuthorization: {dlocal.Authorization("00")}}, "", 401, "invalid_signature"},
		{"wrong content type", "dlocal", body, dlocalSigned(body, secret, now), "text/plain", 415, "unsupported_media_type"},
		{"body over the source's limit", "plain", big, plainSigned(big, plainSecret), "", 413, "body_too_large"},
		{"malformed JSON, valid signature", "plain", []byte(`{"id":`), plainSigned([]byte(`{"id":`), plainSecret), "", 400, "invalid_body"},
		{"invalid UTF-8, valid signature", "plain", latin1, plainSigned(latin1, plainSecret), "", 400, "invalid_body"},
		{"NUL in the id, valid signature", "plain", nul, plainSigned(nul, plainSecret), "", 400, "invalid_body"},
		{"no id, valid signature", "stripe", []byte(`{"object":"event"}`), stripeSigned([]byte(`{"object":"event"}`), stripeSecret, now), "", 400, "invalid_body"},
		{"dlocal without status", "dlocal", []byte(`{"id":"D-1"}`), dlocalSigned([]byte(`{"id":"D-1"}`), secret, now), "", 400, "invalid_body"},
		{"provider event without reference", "invoicy", []byte(`{"type":"document.status_changed","data":{"status":"1"}}`),
			standardSigned(t, []byte(`{"type":"document.status_changed","data":{"status":"1"}}`), providerSecret, "evt_x", now), "", 400, "invalid_body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.header.Clone()
			if h == nil {
				h = http.Header{}
			}
			if tc.ctype != "" {
				h.Set("Content-Type", tc.ctype)
			}
			req, _ := http.NewRequest(http.MethodPost, e.ingest+"/webhooks/"+tc.source, bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range h {
				req.Header[k] = v
			}
			code, got := e.do(req)
			if code != tc.want || !strings.Contains(got, `"code":"`+tc.code+`"`) {
				t.Fatalf("got %d %s, want %d with code %s", code, got, tc.want, tc.code)
			}
		})
	}
	t.Run("wrong method", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.ingest+"/webhooks/dlocal", nil)
		if code, got := e.do(req); code != http.StatusMethodNotAllowed || !strings.Contains(got, `"error"`) {
			t.Fatalf("got %d %s, want 405 with a JSON error", code, got)
		}
	})
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts"); n != 0 {
		t.Fatalf("refused webhooks stored %d receipts", n)
	}
}

// A fiscal provider's webhook is deduped by its webhook-id and forwarded to
// the invoicer as one provider event in the outbox.
func TestProviderEventReachesTheOutboxOnce(t *testing.T) {
	t.Parallel()
	e := startWithSources(t)
	body := []byte(`{"id":"evt_9","type":"document.status_changed","created_at":"2026-11-30T10:00:00Z","data":{"reference":"123456789012345678","status":"1"}}`)
	for range 3 {
		if code, got := e.deliver("invoicy", body, standardSigned(t, body, providerSecret, "evt_9", time.Now())); code != http.StatusOK {
			t.Fatalf("provider webhook: %d %s", code, got)
		}
	}
	e.waitCount(1, "SELECT count(*) FROM ingest.outbox WHERE event_type = 'provider.document_updated' AND event_key = 'provider:invoicy:evt_9'")
	var payload []byte
	if err := e.pool.QueryRow(t.Context(), "SELECT payload FROM ingest.outbox").Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var ev eventsv1.ProviderEvent
	if err := eventsv1.Decode([]byte(outbox.Body(payload)), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.GetReference() != "123456789012345678" || ev.GetProviderStatus() != "1" || ev.GetEventId() != "evt_9" {
		t.Fatalf("provider event %v, want reference 123456789012345678, status 1, event evt_9", &ev)
	}
	if n := e.count("SELECT count(*) FROM ingest.outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}
}

// A multibyte event type longer than the stored limit is cut on a
// character boundary and stored, not refused by PostgreSQL with a 500.
func TestLongMultibyteTypeIsStored(t *testing.T) {
	t.Parallel()
	e := startWithSources(t)
	body := []byte(`{"id":"p-long-type","type":"x` + strings.Repeat("é", 60) + `"}`)
	if code, got := e.deliver("plain", body, plainSigned(body, plainSecret)); code != http.StatusOK {
		t.Fatalf("got %d %s, want 200", code, got)
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = 'p-long-type' AND octet_length(event_type) = 99"); n != 1 {
		t.Fatalf("receipts with the type cut to 99 bytes = %d, want 1", n)
	}
}
