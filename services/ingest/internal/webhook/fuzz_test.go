package webhook

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkReceipt fails unless a receipt PostgreSQL would store: a non-empty
// id of at most maxIDLength bytes, a type of at most maxTypeLength, all
// valid UTF-8 without NUL.
func checkReceipt(t *testing.T, r Receipt) {
	t.Helper()
	// A btree entry holds at most about 2700 bytes: a longer dedupe key
	// would make the unique index refuse the row with a 500.
	if r.EventID == "" || len(r.EventID) > maxIDLength || len(r.EventType) > maxTypeLength || len(r.DedupeKey) > 300 {
		t.Fatalf("receipt out of bounds: id %d bytes, type %d bytes, key %d bytes", len(r.EventID), len(r.EventType), len(r.DedupeKey))
	}
	for _, s := range []string{r.EventID, r.EventType, r.DedupeKey} {
		if !storable(s) {
			t.Fatalf("receipt holds text PostgreSQL refuses: %q", s)
		}
	}
}

// FuzzEventIdentifier reads event ids and types from fuzzed bodies and
// headers, for every kind, from the body and from a header.
func FuzzEventIdentifier(f *testing.F) {
	f.Add(benchBody, "", false, false)
	f.Add([]byte(`{"id":"e","type":"xééééééééééééééééééééééééééééééééééééééééééééééééééééé"}`), "", false, false)
	f.Add([]byte(`{"type":"document.status_changed","created_at":"2026-11-30T00:00:00Z","data":{"reference":"42","status":"5"}}`), "evt_1", true, true)
	f.Add([]byte(`{"id":"a\u0000"}`), "msg\xff", false, true)
	f.Add([]byte(`{"id":"\ud800","type":"\udfff"}`), "", false, false)
	f.Fuzz(func(t *testing.T, body []byte, header string, fromHeader, provider bool) {
		from, name, kind := "body", "id", KindGeneric
		if fromHeader {
			from, name = "header", "Webhook-Id"
		}
		if provider {
			kind = KindFiscalProvider
		}
		h := http.Header{}
		h["Webhook-Id"] = []string{header}
		r, err := EventIdentifier(from, name, kind)(h, body)
		if err != nil {
			return
		}
		if !utf8.Valid(body) {
			return // the handler refuses such a body before identifying it
		}
		checkReceipt(t, r)
		if provider {
			if _, err := ParseProviderEvent(body); err != nil {
				t.Fatalf("provider receipt from a body ParseProviderEvent refuses: %v", err)
			}
		}
	})
}

// FuzzDLocalIdentifier keys fuzzed dLocal notification bodies.
func FuzzDLocalIdentifier(f *testing.F) {
	f.Add([]byte(`{"id":"D-4-test","status":"PAID"}`))
	f.Add([]byte(`{"id":"R-1","status":"SUCCESS","payment_id":"D-4"}`))
	f.Add([]byte(`{"id":"D\u0000","status":"paid"}`))
	f.Add([]byte(`{"id":"D-1","status":"` + strings.Repeat("PAID", 1000) + `"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DLocalIdentifier(nil, body)
		if err != nil || !utf8.Valid(body) {
			return
		}
		checkReceipt(t, r)
		if r.EventType != "payment" && r.EventType != "refund" {
			t.Fatalf("dLocal event type %q", r.EventType)
		}
	})
}
