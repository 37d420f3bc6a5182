package app

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// TestParkedRowIsACaseClosedByUnpark: a row the relay parks (no route for
// its type) opens a parked_outbox_row case in the producer's schema, and
// unparking it through the admin API closes that case with the operator's
// name and reason.
func TestParkedRowIsACaseClosedByUnpark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	for _, schema := range []string{"ingest", Schema} {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			t.Fatal(err)
		}
	}
	client := sqstest.Client(t)
	queueName, _ := sqstest.Queue(t, client, "relaycases", 5)
	cfg := testConfig(t, dsn, "ingest.outbox=billing.>"+queueName)
	cfg.AdminToken = adminToken
	addr := startServe(t, cfg)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id int64
	if err := conn.QueryRow(ctx, `INSERT INTO ingest.outbox (event_key, event_type, payload)
VALUES ('x:1', 'unrouted.event', '{}') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	subject := fmt.Sprintf("outbox:%d", id)
	openCases := func() int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM ingest.cases
WHERE kind = 'parked_outbox_row' AND subject = $1 AND closed_at IS NULL`, subject).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testwait.Until(t, 15*time.Second, 50*time.Millisecond, "the parked row's case", func() bool { return openCases() == 1 })

	api := adminClient{t: t, base: "http://" + addr + "/admin/outboxes/"}
	api.do(http.MethodPost, fmt.Sprintf("ingest.outbox/parked/%d/unpark", id),
		`{"actor":"ana","reason":"route added"}`, http.StatusOK, nil)
	var by, action, reason string
	if err := conn.QueryRow(ctx, `SELECT closed_by, action, reason FROM ingest.cases
WHERE kind = 'parked_outbox_row' AND subject = $1 AND closed_at IS NOT NULL`, subject).Scan(&by, &action, &reason); err != nil {
		t.Fatalf("closed case: %v", err)
	}
	if by != "ana" || action != "unpark" || reason != "route added" {
		t.Errorf("closed case by %q action %q reason %q, want ana, unpark, route added", by, action, reason)
	}
	api.do(http.MethodPost, "ingest.outbox/parked/1/unpark", `{"who":"x"}`, http.StatusBadRequest, nil)
}
