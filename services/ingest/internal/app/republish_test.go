package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The reconciler's sweep asks ingest to announce billing events again: a
// published row becomes due again (unpublished, no attempts), a parked one
// is refused and left alone, an unknown key is reported, and a bad body is
// a 400 naming the field.
func TestOutboxRepublish(t *testing.T) {
	t.Parallel()
	e := start(t)
	admin := http.Header{"Authorization": {"Bearer " + adminToken}}
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO ingest.outbox (event_key, event_type, payload, attempts, last_error, published_at, parked_at, parked_reason)
		VALUES ('payment:P-sent:paid', 'billing.invoice_requested', '\x00', 3, 'timeout', now(), NULL, NULL),
		       ('refund:R-parked:succeeded', 'billing.credit_note_requested', '\x00', 9, 'refused', NULL, now(), 'too many attempts')`); err != nil {
		t.Fatal(err)
	}

	code, body := e.post(e.admin+"/admin/outbox/republish",
		map[string]any{"event_keys": []string{"payment:P-sent:paid", "refund:R-parked:succeeded", "payment:P-none:paid"}}, admin)
	var got struct{ Republished, Parked, Unknown []string }
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
		t.Fatalf("republish: %d %s (%v)", code, body, err)
	}
	if !slices.Equal(got.Republished, []string{"payment:P-sent:paid"}) || !slices.Equal(got.Parked, []string{"refund:R-parked:succeeded"}) ||
		!slices.Equal(got.Unknown, []string{"payment:P-none:paid"}) {
		t.Fatalf("republish answered %+v; want the sent one due, the parked one refused, the other unknown", got)
	}
	if n := e.count(`SELECT count(*) FROM ingest.outbox WHERE event_key = 'payment:P-sent:paid'
		AND published_at IS NULL AND attempts = 0 AND last_error IS NULL AND next_attempt_at <= now()`); n != 1 {
		t.Fatalf("the published row is not due again")
	}
	if n := e.count(`SELECT count(*) FROM ingest.outbox WHERE event_key = 'refund:R-parked:succeeded'
		AND parked_at IS NOT NULL AND attempts = 9`); n != 1 {
		t.Fatalf("the parked row changed")
	}

	// The bound is inclusive: 100 keys are one request, 101 a 400.
	most := make([]string, 100)
	for i := range most {
		most[i] = fmt.Sprintf("payment:P-%03d:paid", i)
	}
	code, body = e.post(e.admin+"/admin/outbox/republish", map[string]any{"event_keys": most}, admin)
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil || len(got.Unknown) != len(most) {
		t.Fatalf("republish of %d keys: %d %s (%v), want 200 with each unknown", len(most), code, body, err)
	}
	many := append(most, "payment:P:paid")
	for _, tc := range []struct {
		name string
		body any
	}{
		{"not JSON", "nope"},
		{"no keys", map[string]any{"event_keys": []string{}}},
		{"too many keys", map[string]any{"event_keys": many}},
		{"not a billing event", map[string]any{"event_keys": []string{"notification:n-1:sent"}}},
	} {
		code, body := e.post(e.admin+"/admin/outbox/republish", tc.body, admin)
		if code != http.StatusBadRequest || !strings.Contains(body, "event_keys") {
			t.Errorf("%s: %d %s, want 400 naming event_keys", tc.name, code, body)
		}
	}
	if code, _ := e.post(e.admin+"/admin/outbox/republish", map[string]any{"event_keys": []string{"payment:P-sent:paid"}}, nil); code != http.StatusUnauthorized {
		t.Errorf("without the admin token: %d, want 401", code)
	}
}
