package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A receipt's body reads back as received whether it was stored deflated
// (a notification of a few hundred bytes), as received (a short one, or one
// deflate does not shrink), or before bodies were deflated; a deflated one
// takes less room in its row.
func TestReceiptBodyReadsBackAsReceived(t *testing.T) {
	t.Parallel()
	st, pool := groupEnv(t)
	ctx := context.Background()
	notification := []byte(`{"id":"D-4-6cfdaead-d976-4955-8fbe-df1ca76963eb","amount":1250.00,"currency":"UYU",` +
		`"payment_method_id":"CARD","payment_method_type":"CARD","payment_method_flow":"DIRECT","country":"UY",` +
		`"created_date":"2026-12-05T11:45:21.705+0000","approved_date":"2026-12-05T11:45:21.705+0000","status":"PAID",` +
		`"status_detail":"The payment was paid.","status_code":"200","order_id":"o-1234","description":"Order o-1234"}`)
	noise := make([]byte, 600) // deflate cannot shrink it
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	bodies := map[string][]byte{"payment:deflated:PAID": notification, "payment:short:PAID": []byte(`{"id":"short","status":"PAID"}`),
		"payment:noise:PAID": noise}
	for key, body := range bodies {
		if _, err := st.InsertReceipt(ctx, NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: "psp", DedupeKey: key,
			EventID: key, EventType: "payment", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	// A row written before the column, as received.
	if _, err := pool.Exec(ctx, `INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, event_id, event_type, body)
VALUES ('dlocal', 'dlocal', 'psp', 'payment:legacy:PAID', 'payment:legacy:PAID', 'payment', $1)`, notification); err != nil {
		t.Fatal(err)
	}
	bodies["payment:legacy:PAID"] = notification

	var raw int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts WHERE NOT body_deflated`).Scan(&raw); err != nil || raw != 3 {
		t.Errorf("%d bodies stored as received (%v), want 3: the short one, the noise and the legacy one", raw, err)
	}
	var stored int
	if err := pool.QueryRow(ctx, `SELECT octet_length(body) FROM ingest.webhook_receipts WHERE dedupe_key = 'payment:deflated:PAID' AND body_deflated`).Scan(&stored); err != nil {
		t.Fatalf("the notification's body is not stored deflated: %v", err)
	}
	if stored*10 > len(notification)*7 {
		t.Errorf("the notification's body takes %d bytes deflated, from %d; want at most 70%%", stored, len(notification))
	}
	claimed, err := st.ClaimReceipts(ctx, uuid.New(), time.Minute, 10)
	if err != nil || len(claimed) != len(bodies) {
		t.Fatalf("claimed %d receipts (%v), want %d", len(claimed), err, len(bodies))
	}
	for _, r := range claimed { // each receipt's event id is its dedupe key
		if !bytes.Equal(r.Body, bodies[r.EventID]) {
			t.Errorf("receipt %s: body %q, want %q", r.EventID, r.Body, bodies[r.EventID])
		}
	}
}
