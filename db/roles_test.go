package db_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

const (
	ingest     = "onceflow_ingest"
	relay      = "onceflow_relay"
	invoicer   = "onceflow_invoicer"
	reconciler = "onceflow_reconciler"
)

// rolesDatabase returns a fresh database with every schema migrated,
// ApplyRoles run twice over it (running it again must be harmless) and a few
// committed rows for the roles to work on. It returns the superuser DSN and
// the id of the fixture row in ingest.outbox.
func rolesDatabase(t *testing.T) (dsn string, outboxID int64) {
	t.Helper()
	ctx := t.Context()
	dsn = migratedDatabase(t)
	for range 2 {
		if err := db.ApplyRoles(ctx, dsn, nil); err != nil {
			t.Fatalf("ApplyRoles: %v", err)
		}
	}
	conn := connect(t, dsn)
	err := conn.QueryRow(ctx, `
WITH c AS (INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name)
           VALUES ('CI', 'UY', '12345678', 'Roles Test') RETURNING id),
     o AS (INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency)
           SELECT 'order-roles', id, 1000, 'UYU' FROM c RETURNING id),
     p AS (INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency)
           SELECT 'pay-roles', id, 'PENDING', 10, 1000, 'UYU' FROM o),
     n AS (INSERT INTO invoicer.outbox (event_key, event_type, payload)
           VALUES ('notification:roles', 'notification.authorized', '\x00'))
INSERT INTO ingest.outbox (event_key, event_type, payload)
VALUES ('payment:pay-roles:paid', 'billing.payment_paid', '\x00') RETURNING id`).Scan(&outboxID)
	if err != nil {
		t.Fatalf("insert fixture rows: %v", err)
	}
	return dsn, outboxID
}

func migratedDatabase(t *testing.T) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	for _, schema := range db.Schemas {
		if err := db.Migrate(t.Context(), dsn, schema); err != nil {
			t.Fatal(err)
		}
	}
	return dsn
}

// TestApplyRolesSetsAndKeepsPasswords sets ingest's password and checks a
// later run without one leaves it alone. Roles are cluster-wide, so this is
// the only test that sets a password, and it puts the old one back.
func TestApplyRolesSetsAndKeepsPasswords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := migratedDatabase(t)
	conn := connect(t, dsn)
	if err := db.ApplyRoles(ctx, dsn, nil); err != nil { // the role exists before keepPassword reads it
		t.Fatal(err)
	}
	keepPassword(t, conn, ingest)
	if err := db.ApplyRoles(ctx, dsn, map[string]string{"ingest": "roles-test-password"}); err != nil {
		t.Fatal(err)
	}
	set := password(t, conn, ingest)
	if !strings.HasPrefix(set, "SCRAM-SHA-256$") && !strings.HasPrefix(set, "md5") {
		t.Fatalf("%s's password is %q after ApplyRoles gave one, want a stored verifier", ingest, set)
	}
	if err := db.ApplyRoles(ctx, dsn, nil); err != nil {
		t.Fatal(err)
	}
	if got := password(t, conn, ingest); got != set {
		t.Fatalf("ApplyRoles without a password changed %s's password", ingest)
	}
}

// TestRolesDoTheirOwnWorkOnly runs statements as each service role (SET
// ROLE from the migrator's connection, rolled back) and checks that what a
// service does succeeds and that writing another service's tables fails
// with insufficient_privilege.
func TestRolesDoTheirOwnWorkOnly(t *testing.T) {
	t.Parallel()
	dsn, outboxID := rolesDatabase(t)
	cases := []struct {
		role, name, sql string
		args            []any
		rows            int64 // rows the statement must touch; -1 when it must be refused
	}{
		{ingest, "insert a receipt", `INSERT INTO ingest.webhook_receipts (source, scope, dedupe_key, body) VALUES ('dlocal', 'dlocal', 'k', '\x00')`, nil, 1},
		{ingest, "insert an outbox row", `INSERT INTO ingest.outbox (event_key, event_type, payload) VALUES ('refund:r:succeeded', 'billing.refund_succeeded', '\x00')`, nil, 1},
		{ingest, "move a payment forward", `UPDATE ingest.payments SET status = 'PAID', status_rank = 30 WHERE id = 'pay-roles'`, nil, 1},
		{ingest, "take a lease", `INSERT INTO ingest.leases (name, holder, token, expires_at) VALUES ('apply', 'h', 1, now())`, nil, 1},
		{ingest, "insert a fiscal document", `INSERT INTO invoicer.fiscal_documents (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer) VALUES ('payment', 'pay-roles', 'invoice', 'k', '1', 101, 1000, 'UYU', '{}')`, nil, -1},
		{ingest, "rewrite its migration history", `DELETE FROM ingest.goose_db_version`, nil, -1},
		{ingest, "create a table", `CREATE TABLE ingest.extra (id int)`, nil, -1},
		{relay, "mark an ingest outbox row published", `UPDATE ingest.outbox SET published_at = now() WHERE id = $1 AND published_at IS NULL`, []any{outboxID}, 1},
		{relay, "park an invoicer outbox row", `UPDATE invoicer.outbox SET parked_at = now(), parked_reason = 'test' WHERE event_key = 'notification:roles'`, nil, 1},
		{relay, "prune an outbox row", `DELETE FROM ingest.outbox WHERE id = $1`, []any{outboxID}, 1},
		{relay, "take its leader lease", `INSERT INTO relay.leases (name, holder, token, expires_at) VALUES ('ingest.outbox/0', 'h', 1, now())`, nil, 1},
		{relay, "insert an outbox row", `INSERT INTO ingest.outbox (event_key, event_type, payload) VALUES ('x', 'billing.x', '\x00')`, nil, -1},
		{relay, "insert a payment", `INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency) SELECT 'p2', order_id, 'PAID', 30, 1, 'UYU' FROM ingest.payments`, nil, -1},
		{relay, "read customers", `SELECT * FROM ingest.customers`, nil, -1},
		{relay, "update a fiscal document", `UPDATE invoicer.fiscal_documents SET status = 'voided'`, nil, -1},
		{invoicer, "record a fiscal document", `INSERT INTO invoicer.fiscal_documents (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer) VALUES ('payment', 'pay-roles', 'invoice', 'payment:pay-roles:paid', '1', 101, 1000, 'UYU', '{}')`, nil, 1},
		{invoicer, "insert an outbox row", `INSERT INTO invoicer.outbox (event_key, event_type, payload) VALUES ('notification:x', 'notification.x', '\x00')`, nil, 1},
		{invoicer, "update a payment", `UPDATE ingest.payments SET status = 'PAID'`, nil, -1},
		{invoicer, "mark its outbox row published through ingest", `UPDATE ingest.outbox SET published_at = now()`, nil, -1},
		{reconciler, "read payments", `SELECT id FROM ingest.payments`, nil, 1},
		{reconciler, "read outbox rows", `SELECT id FROM ingest.outbox UNION ALL SELECT id FROM invoicer.outbox`, nil, 2},
		{reconciler, "read relay leases", `SELECT name FROM relay.leases`, nil, 0},
		{reconciler, "open a finding", `INSERT INTO reconciler.findings (kind, reference) VALUES ('missing_invoice', 'pay-roles')`, nil, 1},
		{reconciler, "insert an outbox row", `INSERT INTO ingest.outbox (event_key, event_type, payload) VALUES ('x', 'billing.x', '\x00')`, nil, -1},
		{reconciler, "update a fiscal document", `UPDATE invoicer.fiscal_documents SET status = 'voided'`, nil, -1},
		{reconciler, "delete a relay lease", `DELETE FROM relay.leases`, nil, -1},
		{reconciler, "read customers", `SELECT * FROM ingest.customers`, nil, -1},
		{reconciler, "read a customer's tax id", `SELECT doc_number FROM ingest.customers`, nil, -1},
		{reconciler, "read webhook bodies", `SELECT body FROM ingest.webhook_receipts`, nil, -1},
		{reconciler, "read order lines", `SELECT lines FROM ingest.orders`, nil, -1},
		{reconciler, "read an order's customer", `SELECT customer_id FROM ingest.orders`, nil, -1},
		{reconciler, "read document buyers", `SELECT buyer FROM invoicer.fiscal_documents`, nil, -1},
		{reconciler, "read notification payloads", `SELECT payload FROM invoicer.outbox`, nil, -1},
		{reconciler, "read billing event payloads (the buyer's snapshot)", `SELECT payload FROM ingest.outbox`, nil, -1},
		{reconciler, "read billing event traces", `SELECT traceparent FROM ingest.outbox`, nil, -1},
		{reconciler, "read emission attempts", `SELECT * FROM invoicer.emission_attempts`, nil, -1},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.role, "onceflow_")+" "+c.name, func(t *testing.T) {
			t.Parallel()
			tag, err := asRole(t, dsn, c.role, c.sql, c.args...)
			if c.rows < 0 {
				assertRefused(t, err)
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", c.role, err)
			}
			if tag.RowsAffected() != c.rows {
				t.Fatalf("%s touched %d rows, want %d", c.role, tag.RowsAffected(), c.rows)
			}
		})
	}
}

// TestRolesHoldExactlyTheirPrivileges compares every role's privileges on
// every table of the four schemas, and on the schemas, with the ownership
// rules of docs/architecture.md, "Ownership in the database".
func TestRolesHoldExactlyTheirPrivileges(t *testing.T) {
	t.Parallel()
	dsn, _ := rolesDatabase(t)
	conn := connect(t, dsn)
	rows, err := conn.Query(t.Context(), `
SELECT r.rolname, n.nspname, c.relname,
       concat_ws(',', CASE WHEN has_table_privilege(r.oid, c.oid, 'SELECT') THEN 'SELECT' END,
                      CASE WHEN has_table_privilege(r.oid, c.oid, 'INSERT') THEN 'INSERT' END,
                      CASE WHEN has_table_privilege(r.oid, c.oid, 'UPDATE') THEN 'UPDATE' END,
                      CASE WHEN has_table_privilege(r.oid, c.oid, 'DELETE') THEN 'DELETE' END,
                      CASE WHEN has_table_privilege(r.oid, c.oid, 'TRUNCATE') THEN 'TRUNCATE' END,
                      CASE WHEN has_table_privilege(r.oid, c.oid, 'REFERENCES') THEN 'REFERENCES' END,
                      CASE WHEN has_table_privilege(r.oid, c.oid, 'TRIGGER') THEN 'TRIGGER' END)
FROM pg_roles r, pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE r.rolname = ANY($1) AND n.nspname = ANY($2) AND c.relkind = 'r'
ORDER BY 1, 2, 3`, []string{ingest, relay, invoicer, reconciler}, db.Schemas)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct{ Role, Schema, Table, Privileges string }
	grants, err := pgx.CollectRows(rows, pgx.RowToStructByPos[grant])
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) < 4*14 {
		t.Fatalf("found %d role/table pairs, want at least 4 roles x 14 tables", len(grants))
	}
	for _, g := range grants {
		if want := wantTablePrivileges(g.Role, g.Schema, g.Table); g.Privileges != want {
			t.Errorf("%s on %s.%s: has %q, want %q", g.Role, g.Schema, g.Table, g.Privileges, want)
		}
	}
	for _, role := range []string{ingest, relay, invoicer, reconciler} {
		for _, schema := range db.Schemas {
			var usage, create bool
			err := conn.QueryRow(t.Context(), `SELECT has_schema_privilege($1, $2, 'USAGE'), has_schema_privilege($1, $2, 'CREATE')`,
				role, schema).Scan(&usage, &create)
			if err != nil {
				t.Fatal(err)
			}
			if want := wantSchemaUsage(role, schema); usage != want || create {
				t.Errorf("%s on schema %s: usage %t create %t, want usage %t and no create", role, schema, usage, create, want)
			}
		}
	}
}

// wantTablePrivileges is the ownership rule (docs/architecture.md) for one role and table.
func wantTablePrivileges(role, schema, table string) string {
	switch {
	case role == db.Role(schema) && table == "goose_db_version":
		return "SELECT"
	case role == db.Role(schema):
		return "SELECT,INSERT,UPDATE,DELETE"
	case role == relay && table == "outbox" && (schema == "ingest" || schema == "invoicer"):
		return "SELECT,UPDATE,DELETE"
	case role == reconciler && table == "cases" && (schema == "ingest" || schema == "invoicer"):
		return "SELECT"
	}
	return ""
}

func wantSchemaUsage(role, schema string) bool {
	return role == db.Role(schema) || role == reconciler ||
		role == relay && (schema == "ingest" || schema == "invoicer")
}

// TestRolesCoverTablesAddedLater creates a table the way a later migration
// would (as the migrator, rolled back at the end) and checks that the
// default privileges reach it.
func TestRolesCoverTablesAddedLater(t *testing.T) {
	t.Parallel()
	dsn, _ := rolesDatabase(t)
	ctx := t.Context()
	tx, err := connect(t, dsn).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `CREATE TABLE ingest.later (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text)`); err != nil {
		t.Fatal(err)
	}
	if err := inSavepoint(ctx, tx, ingest, `INSERT INTO ingest.later (note) VALUES ('x')`); err != nil {
		t.Errorf("ingest cannot insert into its new table: %v", err)
	}
	if err := inSavepoint(ctx, tx, reconciler, `SELECT * FROM ingest.later`); !isInsufficientPrivilege(err) {
		t.Errorf("reconciler reading ingest's new table: got %v, want insufficient_privilege", err)
	}
	if err := inSavepoint(ctx, tx, relay, `SELECT * FROM ingest.later`); !isInsufficientPrivilege(err) {
		t.Errorf("relay reading ingest's new table: got %v, want insufficient_privilege", err)
	}
}

// TestRolesCanLogIn connects as each role to the test database: the roles
// have LOGIN and CONNECT (the local stack uses trust authentication).
func TestRolesCanLogIn(t *testing.T) {
	t.Parallel()
	dsn, _ := rolesDatabase(t)
	for _, role := range []string{ingest, relay, invoicer, reconciler} {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.User(role)
		var user string
		if err := connect(t, u.String()).QueryRow(t.Context(), `SELECT current_user`).Scan(&user); err != nil {
			t.Fatalf("query as %s: %v", role, err)
		}
		if user != role {
			t.Errorf("connected as %s, current_user is %s", role, user)
		}
	}
}

func TestApplyRolesRefusesUnknownSchemasAndUnmigratedDatabases(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.NewDatabase(t)
	if err := db.ApplyRoles(ctx, dsn, map[string]string{"billing": "x"}); err == nil || !strings.Contains(err.Error(), `"billing"`) {
		t.Errorf("ApplyRoles with a password for schema billing: got %v, want an error naming it", err)
	}
	if err := db.ApplyRoles(ctx, dsn, nil); err == nil {
		t.Error("ApplyRoles on a database without the schemas: want an error")
	}
}

// asRole runs sql as role in a transaction it rolls back.
func asRole(tb testing.TB, dsn, role, sql string, args ...any) (pgconn.CommandTag, error) {
	tb.Helper()
	ctx := tb.Context()
	tx, err := connect(tb, dsn).Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
		tb.Fatal(err)
	}
	return tx.Exec(ctx, sql, args...)
}

// inSavepoint runs sql as role inside tx, undoing both afterwards.
func inSavepoint(ctx context.Context, tx pgx.Tx, role, sql string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = sp.Rollback(ctx) }()
	if _, err := sp.Exec(ctx, "SET LOCAL ROLE "+pgx.Identifier{role}.Sanitize()); err != nil {
		return err
	}
	_, err = sp.Exec(ctx, sql)
	return err
}

func assertRefused(tb testing.TB, err error) {
	tb.Helper()
	if !isInsufficientPrivilege(err) {
		tb.Fatalf("got %v, want insufficient_privilege (42501)", err)
	}
}

func isInsufficientPrivilege(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42501"
}

func connect(tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(tb.Context(), dsn)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func password(tb testing.TB, conn *pgx.Conn, role string) string {
	tb.Helper()
	var pw *string
	if err := conn.QueryRow(tb.Context(), `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&pw); err != nil {
		tb.Fatalf("read %s's password (tests need a superuser DATABASE_URL): %v", role, err)
	}
	if pw == nil {
		return ""
	}
	return *pw
}

// keepPassword puts role's password back as it was when the test ends: roles
// are cluster-wide, and the test sets one.
func keepPassword(tb testing.TB, conn *pgx.Conn, role string) {
	tb.Helper()
	var old *string
	err := conn.QueryRow(tb.Context(), `SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&old)
	if errors.Is(err, pgx.ErrNoRows) {
		return
	}
	if err != nil {
		tb.Fatalf("read %s's password (tests need a superuser DATABASE_URL): %v", role, err)
	}
	restore := "NULL"
	if old != nil {
		restore = "'" + strings.ReplaceAll(*old, "'", "''") + "'"
	}
	tb.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "ALTER ROLE "+role+" PASSWORD "+restore); err != nil {
			tb.Errorf("restore %s's password: %v", role, err)
		}
	})
}
