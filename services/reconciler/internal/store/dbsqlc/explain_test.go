package dbsqlc

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// newDB is a fresh database with every service's schema (the
// reconcilertest package imports this one, so it cannot serve here).
func newDB(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return pgtest.NewPool(tb, db.Schemas...)
}

// historySize is the large history the plans are read at. Below about
// 50,000 documents the planner reads the valid documents of a 500-id page
// with one sequential scan of fiscal_documents rather than 500 index
// probes, which costs less at that size (20,000: one scan of 20,000 rows).
const historySize = 100_000

// seedHistory writes historySize payments paid over the last 60 days,
// each with its authorized invoice issued that day and last updated then,
// its finished receipt and its two published outbox rows, and a tenth as
// many closed cases in ingest and in the invoicer.
func seedHistory(tb testing.TB, pool *pgxpool.Pool) {
	tb.Helper()
	for _, sql := range []string{
		`INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name) VALUES ('CI', 'UY', '12345672', 'Bench Buyer')`,
		`INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, psp_payment_id)
SELECT 'order-h' || g, (SELECT id FROM ingest.customers LIMIT 1), 12200, 'UYU', 'h' || g FROM generate_series(1, $1) g`,
		`INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency, paid_at)
SELECT o.psp_payment_id, o.id, 'PAID', 40, 12200, 'UYU',
       now() - interval '60 days' + substr(o.psp_payment_id, 2)::int * (interval '60 days' / $1)
FROM ingest.orders o`,
		`INSERT INTO invoicer.fiscal_documents (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor,
    currency, buyer, status, issue_date, created_at, updated_at, audit_changed_at)
SELECT 'payment', p.id, 'invoice', 'payment:' || p.id || ':paid', (1000000000 + substr(p.id, 2)::int)::text, 101, 12200,
       'UYU', '{}', 'authorized', p.paid_at::date, p.paid_at, p.paid_at, p.paid_at
FROM ingest.payments p`,
		`INSERT INTO ingest.cases (kind, subject, psp_payment_id, closed_at, action)
SELECT 'unknown_payment', 'payment:h' || g, 'h' || g, now() - interval '30 days', 'resolved' FROM generate_series(1, $1 / 10) g`,
		`INSERT INTO invoicer.cases (kind, subject, psp_payment_id, document_id, closed_at, action)
SELECT 'needs_attention', 'document:' || g, 'h' || g, g, now() - interval '30 days', 'resolved' FROM generate_series(1, $1 / 10) g`,
		`INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, body, status, received_at, processed_at)
SELECT 'dlocal', 'dlocal', 'psp', 'payment:' || p.id || ':PAID', '\x', 'done', p.paid_at, p.paid_at FROM ingest.payments p`,
		`INSERT INTO ingest.outbox (event_key, event_type, payload, created_at, published_at)
SELECT 'payment:' || p.id || ':paid', 'billing.payment.paid', '\x', p.paid_at, p.paid_at FROM ingest.payments p`,
		`INSERT INTO invoicer.outbox (event_key, event_type, payload, created_at, published_at)
SELECT 'notification:' || p.id, 'notification.document', '\x', p.paid_at, p.paid_at FROM ingest.payments p`,
		`ANALYZE`,
	} {
		var args []any
		if sqlHasParam(sql) {
			args = append(args, historySize)
		}
		if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
			tb.Fatalf("seed: %v", err)
		}
	}
}

func sqlHasParam(sql string) bool {
	for i := 0; i+1 < len(sql); i++ {
		if sql[i] == '$' && sql[i+1] == '1' {
			return true
		}
	}
	return false
}

// TestSteadyStateQueriesReadWhatIsNewNotTheHistory reads the plans of the
// queries a steady-state run makes (the sweep's recent pass and its
// document and case checks, the audit's look-up of changed documents and a
// day's listing) over 100,000 documents of history spread over 60 days,
// and checks that each reads about what it returns, never the history:
//
//	go test -run TestSteadyStateQueriesReadWhatIsNewNotTheHistory -v ./services/reconciler/internal/store/dbsqlc/
func TestSteadyStateQueriesReadWhatIsNewNotTheHistory(t *testing.T) {
	t.Parallel()
	pool := newDB(t)
	seedHistory(t, pool)
	now := time.Now()
	utc := func(t time.Time) time.Time { y, m, d := t.Date(); return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	today := utc(now)
	page := make([]string, 500) // one page of the sweep's full pass
	for i := range page {
		page[i] = fmt.Sprintf("h%d", i+1)
	}
	perDay := historySize / 60
	cases := []struct {
		name string
		sql  string
		args []any
		max  int // rows the scans may read
	}{
		{"sweep recent pass: payments paid since the watermark", paymentsPaidBefore,
			[]any{now.Add(-10 * time.Minute), now.Add(-70 * time.Minute), "", int32(500)}, 2 * perDay / 24},
		{"sweep: valid documents of one page", documentsValidForSources, []any{"payment", "invoice", page}, 2 * len(page)},
		{"sweep: the documents' ids", documentIDBounds, nil, 2},
		{"sweep: one step of the search by creation time", documentFromID, []any{int64(historySize / 2)}, 1},
		{"sweep: valid documents among the next 5,000 created", documentsValidAfterID, []any{"payment", "invoice", int64(historySize / 2), int32(5000)}, 5000},
		{"sweep: open invoicer cases about one page", invoicerCasesOpenAboutSources, []any{"payment", page}, len(page)},
		{"sweep: open ingest cases about one page", ingestCasesOpenAbout, []any{page}, len(page)},
		{"audit: our documents changed since the previous run", documentsAuditChanged,
			[]any{now.Add(-2 * time.Minute), now.Add(-time.Minute), int64(0), today.AddDate(0, 0, -1), today, now.Add(-48 * time.Hour), now, int32(500)}, 10},
		{"audit: the first page of our documents issued on a day", documentsAuditIssuedOn,
			[]any{today, int64(0), int32(500)}, 2 * 500},
		{"audit: our documents of a day not issued yet", documentsAuditUnissued,
			[]any{today, today.AddDate(0, 0, 1), int64(0), int32(500)}, 10},
	}
	for _, c := range cases {
		rows, scans := pgtest.RowsRead(t, pool, c.sql, c.args...)
		t.Logf("%s: %.0f rows read, by %v", c.name, rows, scans)
		if rows > float64(c.max) {
			t.Errorf("%s reads %.0f rows of %d of history, want at most %d: %v", c.name, rows, historySize, c.max, scans)
		}
	}
}

// TestValidDocumentsComeFromTheIndexAlone: the sweep's check of a page
// against the documents takes their statuses from
// fiscal_documents_source_revision, not from the table, once vacuum has
// been over the history. PSP ids are random, so each of a page's probes
// would otherwise read a table page of its own, most of them history no
// other read keeps in memory.
func TestValidDocumentsComeFromTheIndexAlone(t *testing.T) {
	t.Parallel()
	pool := newDB(t)
	seedHistory(t, pool)
	pgtest.Exec(t, pool, "VACUUM invoicer.fiscal_documents")
	page := make([]string, 500)
	for i := range page {
		page[i] = fmt.Sprintf("h%d", 1+i*(historySize/len(page))) // spread over the history
	}
	fetches, scans := pgtest.HeapFetches(t, pool, documentsValidForSources, "payment", "invoice", page)
	want := "Index Only Scan fiscal_documents_source_revision"
	if len(scans) != 1 || scans[0] != want || fetches > 0 {
		t.Errorf("the valid documents of a page are read by %v with %.0f rows fetched from the table, want one %s and none", scans, fetches, want)
	}
}

// TestDetectorQueriesReadWhatIsStuckNotTheHistory reads the plans of the
// stuck-work detectors' queries, which every run makes, over the same
// history, where nothing is stuck: each must read about nothing.
//
//	go test -run TestDetectorQueriesReadWhatIsStuckNotTheHistory -v ./services/reconciler/internal/store/dbsqlc/
func TestDetectorQueriesReadWhatIsStuckNotTheHistory(t *testing.T) {
	t.Parallel()
	pool := newDB(t)
	seedHistory(t, pool)
	now := time.Now()
	claimExpired := now.Add(-5 * time.Minute)
	cases := []struct {
		name string
		sql  string
		args []any
	}{
		{"detectors: documents stuck", documentsStuck, []any{&claimExpired, now.Add(-time.Hour), int32(100)}},
		{"detectors: receipts stuck", receiptsStuck, []any{&claimExpired, now.Add(-time.Hour), int32(100)}},
		{"detectors: ingest's outbox rows parked", ingestOutboxParked, []any{int32(100)}},
		{"detectors: the invoicer's outbox rows parked", invoicerOutboxParked, []any{int32(100)}},
	}
	for _, c := range cases {
		rows, scans := pgtest.RowsRead(t, pool, c.sql, c.args...)
		t.Logf("%s: %.0f rows read, by %v", c.name, rows, scans)
		if rows > 10 {
			t.Errorf("%s reads %.0f rows of %d of history where none is stuck, want at most 10: %v", c.name, rows, historySize, scans)
		}
	}
}

// TestDocumentsStuckNamesEveryUnfinishedStatus: DocumentsStuck names the
// statuses not final rather than excluding the final ones (so an index
// serves it); a status added to fiscal_documents' check constraint must be
// named there too, or be final.
func TestDocumentsStuckNamesEveryUnfinishedStatus(t *testing.T) {
	t.Parallel()
	pool := newDB(t)
	var def string
	if err := pool.QueryRow(context.Background(), `SELECT pg_get_constraintdef(oid) FROM pg_constraint
WHERE conname = 'fiscal_documents_status_check' AND conrelid = 'invoicer.fiscal_documents'::regclass`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	quoted := regexp.MustCompile(`'([a-z_]+)'`)
	named := map[string]bool{}
	for _, m := range quoted.FindAllStringSubmatch(regexp.MustCompile(`status IN \(([^)]*)\)\)`).FindString(documentsStuck), -1) {
		named[m[1]] = true
	}
	final := map[string]bool{"authorized": true, "observed": true, "issued": true, "rejected": true, "voided": true}
	for _, m := range quoted.FindAllStringSubmatch(def, -1) {
		if s := m[1]; !named[s] && !final[s] {
			t.Errorf("status %q (in %s) is neither final nor named by DocumentsStuck (named: %v)", s, def, named)
		}
	}
	if len(named) == 0 {
		t.Fatalf("found no status named in DocumentsStuck:\n%s", documentsStuck)
	}
}
