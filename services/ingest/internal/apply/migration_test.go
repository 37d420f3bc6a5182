package apply_test

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// migrationsBefore returns ingest's migrations older than name.
func migrationsBefore(tb testing.TB, name string) fs.FS {
	tb.Helper()
	all, err := db.Migrations("ingest")
	if err != nil {
		tb.Fatal(err)
	}
	files, err := fs.ReadDir(all, ".")
	if err != nil {
		tb.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, f := range files {
		if f.Name() >= name {
			continue
		}
		b, err := fs.ReadFile(all, f.Name())
		if err != nil {
			tb.Fatal(err)
		}
		out[f.Name()] = &fstest.MapFile{Data: b}
	}
	return out
}

// migratedBefore is a fresh database with ingest's migrations older than
// name applied, and a pool on it.
func migratedBefore(tb testing.TB, name string) (string, *pgxpool.Pool) {
	tb.Helper()
	dsn := pgtest.NewDatabase(tb)
	if err := pg.Migrate(tb.Context(), dsn, "ingest", migrationsBefore(tb, name)); err != nil {
		tb.Fatal(err)
	}
	pool, err := pgxpool.New(tb.Context(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return dsn, pool
}

// A payment a late PAID left EXPIRED before the fix, its invoice event in
// the outbox, is PAID after migration 00006 (with paid_at, so the
// reconciler sees it); an EXPIRED payment without the event stays EXPIRED.
func TestMigrationRepairsAPaymentLeftExpiredByALatePaid(t *testing.T) {
	ctx := t.Context()
	dsn, pool := migratedBefore(t, "00006")
	_, err := pool.Exec(ctx, `WITH c AS (
  INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name) VALUES ('OTHER', 'UY', 'X1', 'Test Buyer') RETURNING id),
o AS (
  INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency)
  SELECT 'o-' || g, c.id, 100, 'UYU' FROM c, generate_series(1, 2) g RETURNING id, merchant_order_id)
INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency)
SELECT 'pay-' || o.merchant_order_id, o.id, 'EXPIRED', 30, 100, 'UYU' FROM o;
INSERT INTO ingest.outbox (event_key, event_type, payload) VALUES ('payment:pay-o-1:paid', 'billing.document_requested', '\x00')`)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"pay-o-1": "PAID 40 true", "pay-o-2": "EXPIRED 30 false"} {
		var got string
		err := pool.QueryRow(ctx, `SELECT status || ' ' || status_rank || ' ' || (paid_at IS NOT NULL) FROM ingest.payments WHERE id = $1`, id).Scan(&got)
		if err != nil || got != want {
			t.Errorf("payment %s after the migration: %q (%v), want %q", id, got, err, want)
		}
	}
}

// Migration 00026 puts on the poller's schedule the orders still within
// the default give-ups: unpaid ones and recurring ones of the last 72
// hours, paid ones of the last hour; the rest stay off it.
func TestMigrationSchedulesTheOrdersStillPolled(t *testing.T) {
	ctx := t.Context()
	dsn, pool := migratedBefore(t, "00026")
	_, err := pool.Exec(ctx, `WITH c AS (
  INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name) VALUES ('OTHER', 'UY', 'X1', 'Test Buyer') RETURNING id),
o AS (
  INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, recurring, created_at)
  SELECT v.id, c.id, 100, 'UYU', v.recurring, now() - v.age
  FROM c, (VALUES ('unpaid', false, interval '2 hours'), ('paid-recently', false, interval '10 minutes'),
                  ('paid', false, interval '2 hours'), ('recurring', true, interval '2 hours'),
                  ('unpaid-long-ago', false, interval '100 hours')) v(id, recurring, age)
  RETURNING id, merchant_order_id)
INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency)
SELECT 'pay-' || o.merchant_order_id, o.id, 'PAID', 40, 100, 'UYU' FROM o WHERE o.merchant_order_id IN ('paid-recently', 'paid', 'recurring')`)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"unpaid": true, "paid-recently": true, "recurring": true, "paid": false, "unpaid-long-ago": false}
	for id, scheduled := range want {
		var got bool
		if err := pool.QueryRow(ctx, `SELECT next_poll_at IS NOT NULL FROM ingest.orders WHERE merchant_order_id = $1`, id).Scan(&got); err != nil || got != scheduled {
			t.Errorf("order %s on the schedule after the migration: %v (%v), want %v", id, got, err, scheduled)
		}
	}
}
