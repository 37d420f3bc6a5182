package outbox_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

const ddl = `CREATE SCHEMA p; CREATE TABLE p.outbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_key text NOT NULL UNIQUE,
    event_type text NOT NULL, payload bytea NOT NULL, traceparent text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(), next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0, last_error text, published_at timestamptz,
    parked_at timestamptz, parked_reason text)`

var table = outbox.Table{Schema: "p", Name: "outbox"}

func setup(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), ddl); err != nil {
		t.Fatal(err)
	}
	return pool, dsn
}

func insert(t *testing.T, pool *pgxpool.Pool, key string) bool {
	t.Helper()
	ctx := context.Background()
	var inserted bool
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		inserted, err = outbox.Insert(ctx, tx, table, outbox.Message{EventKey: key, EventType: "billing.test", Payload: []byte(`{}`)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return inserted
}

func TestWakerNotifiesAndInsertDedupes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, dsn := setup(t)
	listener, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+outbox.Channel); err != nil {
		t.Fatal(err)
	}
	if !insert(t, pool, "payment:1:paid") {
		t.Fatal("first insert reported not inserted")
	}
	waker := outbox.NewWaker(pool, table, time.Millisecond)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = waker.Run(wctx) }()
	waker.Wake()
	n, err := listener.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != "p.outbox" {
		t.Fatalf("notification payload %q, want p.outbox", n.Payload)
	}
	if insert(t, pool, "payment:1:paid") {
		t.Fatal("duplicate event key inserted twice")
	}
	var count int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM p.outbox").Scan(&count); err != nil || count != 1 {
		t.Fatalf("outbox rows = %d (%v), want 1", count, err)
	}
}

func TestInsertManyKeepsOrderAndSkipsKnownKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	insert(t, pool, "k2")
	msgs := []outbox.Message{
		{EventKey: "k1", EventType: "billing.a", Payload: []byte(`{"n":1}`), Traceparent: "00-t1"},
		{EventKey: "k2", EventType: "billing.b", Payload: []byte(`{"n":2}`)}, // already there
		{EventKey: "k3", EventType: "billing.c", Payload: []byte{0, 1, 2}},
		{EventKey: "k1", EventType: "billing.a", Payload: []byte(`{"n":9}`)}, // repeated in the call
	}
	var inserted int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		inserted, err = outbox.InsertMany(ctx, tx, table, msgs)
		return err
	})
	if err != nil || inserted != 2 {
		t.Fatalf("inserted %d (%v), want 2: k1 and k3", inserted, err)
	}
	rows, err := pool.Query(ctx, "SELECT event_key, event_type, payload, traceparent FROM p.outbox WHERE event_key <> 'k2' ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outbox.Message, error) {
		var m outbox.Message
		return m, r.Scan(&m.EventKey, &m.EventType, &m.Payload, &m.Traceparent)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].EventKey != "k1" || outbox.Body(got[0].Payload) != b64(`{"n":1}`) || got[0].Traceparent != "00-t1" ||
		got[1].EventKey != "k3" || outbox.Body(got[1].Payload) != b64("\x00\x01\x02") {
		t.Fatalf("rows %+v, want k1 (its first copy, with its trace) then k3, in that order", got)
	}
}

// Two transactions inserting one new key at once: the later waits for the
// earlier and, once it commits, fails with a unique violation rather than
// skipping the key (InsertMany looks keys up, it does not say ON CONFLICT);
// run again, it finds the key and inserts nothing.
func TestInsertManyRacingAnotherTransactionFailsThenSkips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	msg := outbox.Message{EventKey: "k-race", EventType: "billing.test", Payload: []byte(`{}`)}
	if n, err := outbox.InsertMany(ctx, first, table, []outbox.Message{msg}); err != nil || n != 1 {
		t.Fatalf("first insert: %d (%v), want 1", n, err)
	}
	second := make(chan error, 1)
	go func() {
		second <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := outbox.InsertMany(ctx, tx, table, []outbox.Message{msg})
			return err
		})
	}()
	pgtest.WaitBlocked(t, pool, "INSERT INTO")
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; !pg.IsUniqueViolation(err) {
		t.Fatalf("second insert: %v, want a unique violation", err)
	}
	if insert(t, pool, "k-race") {
		t.Fatal("k-race inserted again after the first committed")
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestBodyOfEachStoredForm: a payload inserted now (wire form) is sent in
// base64 and decodes to its event; one an earlier version stored as a body,
// base64 or protojson, is sent as it is.
func TestBodyOfEachStoredForm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	want := &eventsv1.ProviderEvent{EventId: "evt_1", Provider: "invoicy", Reference: "123456789012345678", ProviderStatus: "1"}
	wire, err := eventsv1.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	body, err := eventsv1.Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := outbox.Insert(ctx, tx, table, outbox.Message{EventKey: "now", EventType: "provider.x", Payload: wire})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	protojson := `{"eventId":"evt_1"}`
	if _, err := pool.Exec(ctx, `INSERT INTO p.outbox (event_key, event_type, payload) VALUES ('base64', 'provider.x', $1), ('protojson', 'provider.x', $2)`,
		body, []byte(protojson)); err != nil {
		t.Fatal(err)
	}
	stored := map[string][]byte{}
	rows, _ := pool.Query(ctx, "SELECT event_key, payload FROM p.outbox")
	var key string
	var payload []byte
	if _, err := pgx.ForEachRow(rows, []any{&key, &payload}, func() error { stored[key] = payload; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(stored["now"]) != len(wire)+1 {
		t.Errorf("stored %d bytes for a %d-byte event, want its wire form and one byte", len(stored["now"]), len(wire))
	}
	for key, want := range map[string]string{"now": string(body), "base64": string(body), "protojson": protojson} {
		if got := outbox.Body(stored[key]); got != want {
			t.Errorf("body of the %s row = %q, want %q", key, got, want)
		}
	}
	var got eventsv1.ProviderEvent
	if err := eventsv1.Decode([]byte(outbox.Body(stored["now"])), &got); err != nil || !proto.Equal(&got, want) {
		t.Fatalf("the body decodes to %v (%v), want %v", &got, err, want)
	}
}

func TestDueMarkPublishedAndPark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	for _, k := range []string{"a", "b", "c"} {
		insert(t, pool, k)
	}
	rows, err := outbox.Due(ctx, pool, table, 10, 0, nil)
	if err != nil || len(rows) != 3 || rows[0].EventKey != "a" {
		t.Fatalf("Due = %+v, %v; want a, b, c", rows, err)
	}
	if after, err := outbox.Due(ctx, pool, table, 10, rows[1].ID, nil); err != nil || len(after) != len(rows)-2 || after[0].ID != rows[2].ID {
		t.Fatalf("due after row %d = %+v (%v), want the rows after it", rows[1].ID, after, err)
	}
	if rest, err := outbox.Due(ctx, pool, table, 10, 0, []int64{rows[0].ID, rows[2].ID}); err != nil || len(rest) != 1 || rest[0].EventKey != "b" {
		t.Fatalf("Due except a and c = %+v, %v; want b", rest, err)
	}
	if err := outbox.MarkPublished(ctx, pool, table, []int64{rows[0].ID}); err != nil {
		t.Fatal(err)
	}
	if err := outbox.MarkFailed(ctx, pool, table, rows[1].ID, "boom", time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	if err := outbox.MarkFailed(ctx, pool, table, rows[2].ID, "too big", time.Now(), true); err != nil {
		t.Fatal(err)
	}
	left, err := outbox.Due(ctx, pool, table, 10, 0, nil)
	if err != nil || len(left) != 0 {
		t.Fatalf("Due after publish/backoff/park = %+v, %v; want none", left, err)
	}
	var reason string
	if err := pool.QueryRow(ctx, "SELECT parked_reason FROM p.outbox WHERE id = $1", rows[2].ID).Scan(&reason); err != nil || reason != "too big" {
		t.Fatalf("parked_reason = %q (%v)", reason, err)
	}
}

func TestFencedMarkSkipsTheFlushForItsTransactionAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := setup(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE p.fence (name text PRIMARY KEY); INSERT INTO p.fence VALUES ('held')`); err != nil {
		t.Fatal(err)
	}
	insert(t, pool, "a")
	insert(t, pool, "b")
	rows, err := outbox.Due(ctx, pool, table, 10, 0, nil)
	if err != nil || len(rows) != 2 {
		t.Fatalf("Due = %+v, %v; want a and b", rows, err)
	}
	const fence = `fence AS (SELECT 1 FROM p.fence WHERE name = $2 FOR SHARE)`
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	setting := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (v string) {
		t.Helper()
		if err := q.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held, err := outbox.MarkPublishedFenced(ctx, tx, table, []int64{rows[0].ID}, fence, []any{"held"})
	if err != nil || !held {
		t.Fatalf("MarkPublishedFenced under a held fence = %v, %v; want held", held, err)
	}
	if v := setting(tx); v != "off" {
		t.Errorf("synchronous_commit in the mark's transaction = %q, want off", v)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := setting(conn); v != "on" {
		t.Errorf("synchronous_commit on the connection after the mark = %q, want on (the setting leaked)", v)
	}
	held, err = outbox.MarkPublishedFenced(ctx, conn, table, []int64{rows[1].ID}, fence, []any{"lost"})
	if err != nil || held {
		t.Fatalf("MarkPublishedFenced under a fence without its row = %v, %v; want not held", held, err)
	}
	var published []string
	r, err := pool.Query(ctx, `SELECT event_key FROM p.outbox WHERE published_at IS NOT NULL ORDER BY id`)
	if err == nil {
		published, err = pgx.CollectRows(r, pgx.RowTo[string])
	}
	if err != nil || len(published) != 1 || published[0] != "a" {
		t.Fatalf("published rows = %v, %v; want only a", published, err)
	}
}
