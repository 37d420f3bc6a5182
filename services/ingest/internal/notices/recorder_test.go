package notices_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/services/ingest/internal/notices"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// env is a migrated ingest database holding order o-1 paid by payment p-1.
type env struct {
	pool  *pgxpool.Pool
	store *store.Store
	order uuid.UUID
}

func newEnv(t *testing.T) env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t, "ingest")
	var order uuid.UUID
	err := pool.QueryRow(ctx, `WITH c AS (INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name)
VALUES ('CI', 'UY', '19119365', 'x') RETURNING id)
INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency) SELECT 'o-1', id, 100000, 'UYU' FROM c RETURNING id`).Scan(&order)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency)
VALUES ('p-1', $1, 'PAID', 30, 100000, 'UYU')`, order); err != nil {
		t.Fatal(err)
	}
	return env{pool: pool, store: store.New(pool), order: order}
}

func event(ref, source, status string, kind eventsv1.DocumentKind, typ eventsv1.NotificationType, at time.Time) string {
	ev := &eventsv1.NotificationEvent{EventKey: "document:" + ref + ":" + status, Type: typ, SourceKind: "payment", SourceRef: source,
		PaymentRef: "p-1", Reference: ref, CfeType: 101, Kind: kind, Status: status, AmountMinor: 100000, Currency: "UYU",
		OccurredAt: timestamppb.New(at), CaeId: "90101", CaeRangeFrom: 1, CaeRangeTo: 1000, CaeExpires: "2028-12-01",
		VerifyUrl: "https://example.invalid/qr?" + ref}
	if kind == eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE {
		ev.SourceKind = "refund"
	}
	b, _ := eventsv1.Encode(ev)
	return string(b)
}

func (e env) handle(t *testing.T, r *notices.Recorder, body string) string {
	t.Helper()
	outcome, err := r.Handle(context.Background(), body)
	if err != nil {
		t.Fatalf("handle: %s %v", outcome, err)
	}
	return outcome
}

func (e env) deliveries(t *testing.T) []string {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), "SELECT event_id FROM ingest.notification_deliveries ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	return ids
}

func TestALateOlderAnnouncementNeverUndoesNews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := notices.NewRecorder(e.store, zaptest.NewLogger(t), true, nil)
	now := time.Now()
	invoice, auth := eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE, eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED
	attention := eventsv1.NotificationType_NOTIFICATION_TYPE_NEEDS_ATTENTION
	if got := e.handle(t, r, event("11", "p-1", "authorized", invoice, auth, now)); got != "queued" {
		t.Fatalf("authorized: outcome %s, want queued", got)
	}
	if got := e.handle(t, r, event("11", "p-1", "needs_attention", invoice, attention, now.Add(-time.Minute))); got != "recorded" {
		t.Fatalf("needs attention: outcome %s, want recorded (never sent to the merchant)", got)
	}
	e.handle(t, r, event("11", "p-1", "authorized", invoice, auth, now)) // redelivered
	e.handle(t, r, event("12", "r-1", "authorized", eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE, auth, now))

	docs, err := e.store.OrderDocuments(context.Background(), e.order)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Kind != "invoice" || docs[0].Status != "authorized" || docs[0].CAEID != "90101" ||
		docs[1].Kind != "credit_note" || docs[1].Reference != "12" {
		t.Fatalf("order documents %+v, want the authorized invoice then the credit note", docs)
	}
	if got := e.deliveries(t); strings.Join(got, ",") != "document:11:authorized,document:12:authorized" {
		t.Fatalf("deliveries %v, want one per authorized document", got)
	}
}

func TestWithoutAMerchantURLNothingIsQueued(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := notices.NewRecorder(e.store, zaptest.NewLogger(t), false, nil)
	body := event("21", "p-1", "authorized", eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE, eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED, time.Now())
	if got := e.handle(t, r, body); got != "recorded" || len(e.deliveries(t)) != 0 {
		t.Fatalf("outcome %s with deliveries %v, want recorded and none", got, e.deliveries(t))
	}
}

func TestUnreadableNotificationsStayInTheQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := notices.NewRecorder(e.store, zaptest.NewLogger(t), true, nil)
	good := &eventsv1.NotificationEvent{EventKey: "document:31:authorized", SourceKind: "payment", SourceRef: "p-1",
		Reference: "31", Kind: eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE, Status: "authorized", OccurredAt: timestamppb.Now()}
	for name, mutate := range map[string]func(*eventsv1.NotificationEvent){
		"no reference":        func(ev *eventsv1.NotificationEvent) { ev.Reference = "" },
		"no status":           func(ev *eventsv1.NotificationEvent) { ev.Status = "" },
		"unknown source":      func(ev *eventsv1.NotificationEvent) { ev.SourceKind = "chargeback" },
		"a refund, no kind":   func(ev *eventsv1.NotificationEvent) { ev.SourceKind, ev.Kind = "refund", 0 },
		"bad CAE expiry":      func(ev *eventsv1.NotificationEvent) { ev.CaeExpires = "01/12/2028" },
		"bad issue date":      func(ev *eventsv1.NotificationEvent) { ev.IssueDate = "tomorrow" },
		"no event key at all": func(ev *eventsv1.NotificationEvent) { ev.EventKey = "" },
	} {
		ev := proto.Clone(good).(*eventsv1.NotificationEvent)
		mutate(ev)
		b, _ := eventsv1.Encode(ev)
		if outcome, err := r.Handle(context.Background(), string(b)); err == nil || outcome != "unreadable" {
			t.Errorf("%s: outcome %s, %v; want unreadable and an error", name, outcome, err)
		}
	}
	if outcome, err := r.Handle(context.Background(), "{not json"); err == nil || outcome != "unreadable" {
		t.Errorf("malformed JSON: outcome %s, %v; want unreadable and an error", outcome, err)
	}
	if n := len(e.deliveries(t)); n != 0 {
		t.Fatalf("%d deliveries queued from unreadable events", n)
	}
}

// A batch is written in one statement as its notifications would be one by
// one: of two announcements of one document the later wins, whatever their
// order, and each row holds what a single recording holds. A document the
// database refuses fails alone and stays in the queue; the rest are
// recorded.
func TestABatchRecordsAsOneByOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	r := notices.NewRecorder(e.store, zaptest.NewLogger(t), false, nil)
	now := time.Now()
	invoice, auth := eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE, eventsv1.NotificationType_NOTIFICATION_TYPE_AUTHORIZED
	attention := eventsv1.NotificationType_NOTIFICATION_TYPE_NEEDS_ATTENTION
	e.handle(t, r, event("40", "p-40", "authorized", invoice, auth, now))
	outs := r.HandleBatch(ctx, []string{
		event("41", "p-41", "authorized", invoice, auth, now),
		event("41", "p-41", "needs_attention", invoice, attention, now.Add(-time.Minute)),
		event("42", "p-42", "authorized", invoice, auth, now),
		"not a notification",
	})
	if got := labels(outs); got != "recorded,recorded,recorded,unreadable" {
		t.Fatalf("outcomes %s, want recorded,recorded,recorded,unreadable", got)
	}
	if got := e.status(t, "41"); got != "authorized" {
		t.Fatalf("document 41 is %s, want authorized (the later announcement)", got)
	}
	if single, batched := e.row(t, "40"), e.row(t, "42"); single != batched {
		t.Fatalf("recorded in a batch:\n%s\nwant as recorded alone:\n%s", batched, single)
	}

	e.exec(t, `CREATE FUNCTION ingest.refuse_43() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.reference = '43' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$`)
	e.exec(t, `CREATE TRIGGER refuse_43 BEFORE INSERT ON ingest.documents FOR EACH ROW EXECUTE FUNCTION ingest.refuse_43()`)
	outs = r.HandleBatch(ctx, []string{event("43", "p-43", "authorized", invoice, auth, now), event("44", "p-44", "authorized", invoice, auth, now)})
	if got := labels(outs); got != "error,recorded" || outs[0].Err == nil {
		t.Fatalf("outcomes %s (%v), want error,recorded", got, outs[0].Err)
	}
	if got := e.status(t, "44"); got != "authorized" {
		t.Fatalf("document 44 is %q, want authorized", got)
	}
}

func labels(outs []notices.Outcome) string {
	var l []string
	for _, o := range outs {
		l = append(l, o.Label)
	}
	return strings.Join(l, ",")
}

func (e env) status(t *testing.T, ref string) string {
	t.Helper()
	var s string
	if err := e.pool.QueryRow(context.Background(), `SELECT status FROM ingest.documents WHERE reference = $1`, ref).Scan(&s); err != nil {
		t.Fatalf("document %s: %v", ref, err)
	}
	return s
}

// row is document ref's columns but those naming it and its write time.
func (e env) row(t *testing.T, ref string) string {
	t.Helper()
	var s string
	err := e.pool.QueryRow(context.Background(), `SELECT (to_jsonb(d) - 'reference' - 'source_ref' - 'event_key' - 'verify_url' - 'updated_at')::text
FROM ingest.documents d WHERE reference = $1`, ref).Scan(&s)
	if err != nil {
		t.Fatalf("document %s: %v", ref, err)
	}
	return s
}

func (e env) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := e.pool.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
