package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestOnceflowctlCases drives `onceflowctl cases` against the stack: a
// reconciler case is listed, shown and acknowledged; a row the relay parks
// is a case in ingest.cases, and resolving it with unpark goes through the
// relay, which records who and why; bad flags are usage errors naming the
// flag.
func TestOnceflowctlCases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := startStack(ctx, t, stack.Options{Reconciler: true})
	conn, err := pgx.Connect(ctx, s.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var own, row int64
	if err := conn.QueryRow(ctx, `INSERT INTO reconciler.cases (kind, subject, psp_payment_id, amount_minor, currency, evidence)
VALUES ('missing_document', 'payment:ctl-1', 'ctl-1', 12200, 'UYU', '{"document_status":"rejected"}') RETURNING id`).Scan(&own); err != nil {
		t.Fatal(err)
	}
	// The relay has no route for this type: it parks the row, and the
	// trigger opens its case.
	if err := conn.QueryRow(ctx, `INSERT INTO ingest.outbox (event_key, event_type, payload)
VALUES ('ctl:unrouted', 'unrouted.event', '{}') RETURNING id`).Scan(&row); err != nil {
		t.Fatal(err)
	}
	var parked int64
	err = stack.WaitFor(ctx, time.Minute, func() (bool, error) {
		err := conn.QueryRow(ctx, `SELECT id FROM ingest.cases WHERE kind = 'parked_outbox_row' AND subject = $1 AND closed_at IS NULL`,
			fmt.Sprintf("outbox:%d", row)).Scan(&parked)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the parked row's case: %v", err)
	}
	ctl := ctlRunner(ctx, t, s)
	ownID, parkedID := fmt.Sprintf("reconciler-%d", own), fmt.Sprintf("ingest-%d", parked)

	out, code := ctl("cases", "list", "--json")
	var page struct{ Cases []struct{ ID, Kind string } }
	if err := json.Unmarshal([]byte(out), &page); code != 0 || err != nil || !strings.Contains(out, ownID) || !strings.Contains(out, parkedID) {
		t.Fatalf("cases list --json exited %d (%v):\n%s", code, err, out)
	}
	if out, code = ctl("cases", "list", "--service", "relay"); code != 0 || !hasRow(out, parkedID, "parked_outbox_row") || strings.Contains(out, ownID) {
		t.Fatalf("cases list --service relay exited %d:\n%s", code, out)
	}
	if out, code = ctl("cases", "show", ownID); code != 0 || !hasRow(out, ownID, "missing_document", "payment:ctl-1", "122.00", "UYU") {
		t.Fatalf("cases show exited %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cases", "resolve", ownID, "--action", "acknowledge", "--reason", "x"}, 2, "--actor"},
		{[]string{"cases", "resolve", "nope-1", "--action", "acknowledge", "--actor", "ana", "--reason", "x"}, 2, "ID"},
		{[]string{"cases", "list", "--limit", "0"}, 2, "--limit"},
		{[]string{"cases", "resolve", ownID, "--action", "reissue", "--actor", "ana", "--reason", "x"}, 1, "wrong_action"},
		{[]string{"cases", "resolve", parkedID, "--action", "acknowledge", "--actor", "ana", "--reason", "x"}, 2, "unpark"},
	} {
		if out, code := ctl(tc.args...); code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("onceflowctl %v exited %d, want %d naming %q:\n%s", tc.args, code, tc.code, tc.want, out)
		}
	}
	if out, code = ctl("cases", "resolve", ownID, "--action", "acknowledge", "--actor", "ana", "--reason", "issued by hand"); code != 0 ||
		!strings.Contains(out, "closed (acknowledge by ana)") {
		t.Fatalf("resolve %s exited %d:\n%s", ownID, code, out)
	}
	if out, code = ctl("cases", "resolve", parkedID, "--action", "unpark", "--actor", "ana", "--reason", "route added", "--json"); code != 0 ||
		!strings.Contains(out, `"closed_by": "ana"`) || !strings.Contains(out, `"reason": "route added"`) {
		t.Fatalf("resolve %s exited %d:\n%s", parkedID, code, out)
	}
	if out, code = ctl("cases", "list", "--status", "closed"); code != 0 || !strings.Contains(out, ownID) || !strings.Contains(out, parkedID) {
		t.Fatalf("cases list --status closed exited %d:\n%s", code, out)
	}
}
