package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/api/openapi/openapitest"
	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/sqstest"
)

const adminToken = "test-admin-token"

// TestAdminEndpoints drives the operator endpoints of a running relay: a
// parked row is listed, unparked and then delivered; published rows are
// replayed and delivered again; bad requests get a 4xx JSON error.
func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	for _, schema := range []string{"ingest", Schema} {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			t.Fatal(err)
		}
	}
	client := sqstest.Client(t)
	queueName, queueURL := sqstest.Queue(t, client, "relayadmin", 5)
	cfg := testConfig(t, dsn, "ingest.outbox=billing.>"+queueName)
	cfg.AdminToken = adminToken
	addr := startServe(t, cfg)
	api := adminClient{t: t, base: "http://" + addr + "/admin/outboxes/"}

	insertRow(t, dsn, "payment:1:paid")
	if key := receiveOne(t, client, queueURL); key != "payment:1:paid" {
		t.Fatalf("received %q, want payment:1:paid", key)
	}
	waitPublished(t, dsn, 1) // the first row of a fresh outbox: its mark commits just after the send
	parkedID := insertParked(t, dsn, "payment:2:paid")

	var page struct {
		Rows []struct {
			ID     int64  `json:"id"`
			Key    string `json:"event_key"`
			Reason string `json:"parked_reason"`
		} `json:"rows"`
	}
	api.do(http.MethodGet, "ingest.outbox/parked", "", http.StatusOK, &page)
	if len(page.Rows) != 1 || page.Rows[0].ID != parkedID || page.Rows[0].Reason != "gave up" {
		t.Fatalf("parked rows = %+v, want row %d parked for 'gave up'", page.Rows, parkedID)
	}
	var status struct {
		Outboxes []struct {
			Outbox          string `json:"outbox"`
			Pending, Parked int64
		} `json:"outboxes"`
	}
	adminClient{t: t, base: "http://" + addr + "/admin/outboxes"}.do(http.MethodGet, "", "", http.StatusOK, &status)
	if len(status.Outboxes) != 1 || status.Outboxes[0].Outbox != "ingest.outbox" || status.Outboxes[0].Parked != 1 || status.Outboxes[0].Pending != 0 {
		t.Fatalf("outbox status = %+v, want ingest.outbox with 1 parked and none pending", status.Outboxes)
	}
	var leaders struct {
		Leases []struct {
			Name, Holder string
			Live         bool
		}
	}
	adminClient{t: t, base: "http://" + addr + "/admin/leaders"}.do(http.MethodGet, "", "", http.StatusOK, &leaders)
	if len(leaders.Leases) != 1 || leaders.Leases[0].Name != "outbox:ingest.outbox:0" || leaders.Leases[0].Holder != cfg.Holder || !leaders.Leases[0].Live {
		t.Fatalf("leaders = %+v, want the live lease of ingest.outbox held by %s", leaders.Leases, cfg.Holder)
	}
	api.do(http.MethodPost, fmt.Sprintf("ingest.outbox/parked/%d/unpark", parkedID), "", http.StatusOK, nil)
	if key := receiveOne(t, client, queueURL); key != "payment:2:paid" {
		t.Fatalf("received %q after unpark, want payment:2:paid", key)
	}

	var replay struct {
		Replayed int   `json:"replayed"`
		LastID   int64 `json:"last_id"`
	}
	waitPublished(t, dsn, 1)
	api.do(http.MethodPost, "ingest.outbox/replay", `{"from_id":1,"to_id":1}`, http.StatusOK, &replay)
	if replay.Replayed != 1 || replay.LastID != 1 {
		t.Fatalf("replay = %+v, want row 1", replay)
	}
	if key := receiveOne(t, client, queueURL); key != "payment:1:paid" {
		t.Fatalf("received %q after replay, want payment:1:paid again", key)
	}

	for _, tc := range []struct {
		method, path, body, token string
		status                    int
		code                      string
	}{
		{http.MethodGet, "ingest.outbox/parked", "", "wrong", http.StatusUnauthorized, "unauthorized"},
		{http.MethodGet, "nope.outbox/parked", "", adminToken, http.StatusNotFound, "unknown_outbox"},
		{http.MethodGet, "ingest.outbox/parked?limit=0", "", adminToken, http.StatusBadRequest, "invalid_limit"},
		{http.MethodGet, "ingest.outbox/parked?after_id=x", "", adminToken, http.StatusBadRequest, "invalid_after_id"},
		{http.MethodPost, fmt.Sprintf("ingest.outbox/parked/%d/unpark", parkedID), "", adminToken, http.StatusNotFound, "not_parked"},
		{http.MethodPost, "ingest.outbox/parked/-1/unpark", "", adminToken, http.StatusBadRequest, "invalid_id"},
		{http.MethodPost, "ingest.outbox/replay", `{}`, adminToken, http.StatusBadRequest, "invalid_range"},
		{http.MethodPost, "ingest.outbox/replay", `{"from_id":5,"to_id":2}`, adminToken, http.StatusBadRequest, "invalid_range"},
		{http.MethodPost, "ingest.outbox/replay", `{"fromId":1}`, adminToken, http.StatusBadRequest, "invalid_body"},
		{http.MethodPost, "ingest.outbox/replay", `{"from":"2026-01-02T00:00:00Z","to":"2026-01-01T00:00:00Z"}`, adminToken, http.StatusBadRequest, "invalid_range"},
		{http.MethodPost, "ingest.outbox/replay", `{"from_id":1,"to_id":2,"limit":100000}`, adminToken, http.StatusBadRequest, "invalid_limit"},
	} {
		t.Run(tc.method+" "+tc.path+" "+tc.body, func(t *testing.T) {
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			api := adminClient{t: t, base: api.base, token: tc.token}
			api.do(tc.method, tc.path, tc.body, tc.status, &body)
			if body.Error.Code != tc.code || body.Error.Message == "" {
				t.Errorf("error body = %+v, want code %q and a message", body.Error, tc.code)
			}
		})
	}
}

// adminClient calls the operator endpoints with a bearer token.
type adminClient struct {
	t     *testing.T
	base  string
	token string // empty means adminToken
}

// do sends the request, checks the status and decodes the JSON answer into
// out when out is not nil.
func (a adminClient) do(method, path, body string, wantStatus int, out any) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	token := a.token
	if token == "" {
		token = adminToken
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := openapitest.Client(a.t, "relay", nil).Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		a.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, raw, wantStatus)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

// insertParked adds a row as the relay leaves one after its last failure.
func insertParked(t *testing.T, dsn, key string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id int64
	err = conn.QueryRow(ctx, `INSERT INTO ingest.outbox (event_key, event_type, payload, attempts, last_error, parked_at, parked_reason)
VALUES ($1, 'billing.document_requested', '{}', 10, 'gave up', now(), 'gave up') RETURNING id`, key).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// waitPublished waits until row id is marked published; the mark commits
// just after the message is sent.
func waitPublished(t *testing.T, dsn string, id int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var published bool
		if err := conn.QueryRow(ctx, `SELECT published_at IS NOT NULL FROM ingest.outbox WHERE id = $1`, id).Scan(&published); err != nil {
			t.Fatal(err)
		}
		if published {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("row %d not marked published", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
