package sweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// seedHistory writes n payments paid 60 days ago and later, a second
// apart, each with its authorized invoice (only a valid document counts),
// and a few recent payments whose invoice is missing.
func seedHistory(tb testing.TB, db *reconcilertest.DB, n int) {
	tb.Helper()
	seedPaid(tb, db, "h", 1_000_000_000, n, time.Now().Add(-60*24*time.Hour), time.Second)
	for i := range 3 { // a few recent payments whose invoice is missing
		id := fmt.Sprintf("recent-%d", i)
		db.Payment(tb, id, time.Now().Add(-15*time.Minute))
		db.Outbox(tb, reconcilertest.PaymentPaid(id))
	}
}

// seedPaid writes n payments paid from first on, every apart, each with its
// authorized invoice (numbered from refs + 1) created a second after it was
// paid, as the pipeline would, in a few INSERT … SELECT statements. Their
// ids look like dLocal's ("D-4-" and a UUID made of prefix and the
// payment's number), so the sweep's look-ups probe the documents' index at
// random as they do in production, and each document carries a buyer and
// lines of a real one's size, so the table holds as many rows to a page.
func seedPaid(tb testing.TB, db *reconcilertest.DB, prefix string, refs int64, n int, first time.Time, every time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	order := "order-" + prefix + "-"
	ref := `'D-4-' || md5('` + prefix + `' || g)::uuid`
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name)
SELECT 'CI', 'UY', '12345672', 'Bench Buyer' WHERE NOT EXISTS (SELECT FROM ingest.customers)`, nil},
		{`INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, psp_payment_id)
SELECT '` + order + `' || g, (SELECT id FROM ingest.customers LIMIT 1), 12200, 'UYU', ` + ref + ` FROM generate_series(1, $1) g`, []any{n}},
		{`INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency, paid_at)
SELECT o.psp_payment_id, o.id, 'PAID', 40, 12200, 'UYU', $1::timestamptz + substr(o.merchant_order_id, ` + fmt.Sprint(len(order)+1) + `)::int * $2::interval
FROM ingest.orders o WHERE o.merchant_order_id LIKE '` + order + `%'`, []any{first, every}},
		{`INSERT INTO invoicer.fiscal_documents (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer, lines, status, created_at)
SELECT 'payment', ` + ref + `, 'invoice', 'payment:' || ` + ref + ` || ':paid', ($4::bigint + g)::text, 101, 12200, 'UYU',
       jsonb_build_object('doc_type', 'CI', 'doc_country', 'UY', 'doc_number', '12345672', 'legal_name', 'Bench Buyer ' || g,
                          'address', 'Avenida 18 de Julio ' || g || ', Montevideo', 'email', 'buyer' || g || '@example.com'),
       jsonb_build_array(jsonb_build_object('name', 'Order ` + order + `' || g, 'quantity', 1, 'unit_price_minor', 12200, 'amount_minor', 12200, 'vat', 'basic')),
       'authorized', $2::timestamptz + g * $3::interval + interval '1 second'
FROM generate_series(1, $1) g`, []any{n, first, every, refs}},
		{`VACUUM ANALYZE`, nil},
	} {
		if _, err := db.Pool.Exec(ctx, st.sql, st.args...); err != nil {
			tb.Fatalf("seed %d %s payments: %v", n, prefix, err)
		}
	}
}

// BenchmarkSweepSteadyState times one sweep run once the watermark is set
// (a recent pass over what became final since, plus one slice of the full
// pass: 5,000 payments) over 200,000 and over 1,000,000 historical paid
// payments with their invoices, and prints both and their ratio, which
// must stay under 2. Twenty runs never finish the smaller history's full
// pass, so each run checks as many rows over either:
//
//	go test -run '^$' -bench BenchmarkSweepSteadyState -benchtime 20x ./services/reconciler/internal/sweep/
//
// Seeding the million takes a minute or two, so it is never part of go test.
func BenchmarkSweepSteadyState(b *testing.B) {
	sizes := []int{200_000, 1_000_000}
	perRun := map[int]time.Duration{}
	for _, n := range sizes {
		db := reconcilertest.NewDB(b)
		seedHistory(b, db, n)
		s, _, _ := newSweeper(b, db, sweep.Config{PageSize: 500})
		own := store.New(db.Pool)
		if _, err := s.Run(context.Background(), own); err != nil { // sets the watermark
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			var checked int
			for b.Loop() {
				res, err := s.Run(context.Background(), own)
				if err != nil {
					b.Fatal(err)
				}
				checked = res.Checked
			}
			perRun[n] = b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(checked), "rows/run")
		})
	}
	small, large := perRun[sizes[0]], perRun[sizes[1]]
	if small > 0 && large > 0 {
		ratio := float64(large) / float64(small)
		fmt.Printf("sweep steady-state run: history=%d %v, history=%d %v, ratio %.2f\n", sizes[0], small, sizes[1], large, ratio)
		if ratio > 2 {
			b.Errorf("a run over %d payments takes %.2f times one over %d, want at most 2", sizes[1], ratio, sizes[0])
		}
	}
}

// BenchmarkSweepRecentPass times a recent pass over the last minute's
// 12,000 payments (200 a second, each invoiced a second after it was paid)
// above 200,000 and above 1,000,000 older ones, and prints both and their
// ratio. Each run starts as a restarted reconciler would, with no
// watermark and nothing known valid, so every one of the 12,000 is checked
// against the documents; the full pass checks one payment.
//
//	go test -run '^$' -bench BenchmarkSweepRecentPass -benchtime 20x ./services/reconciler/internal/sweep/
func BenchmarkSweepRecentPass(b *testing.B) {
	sizes := []int{200_000, 1_000_000}
	perRun := map[int]time.Duration{}
	grace := 10 * time.Minute
	for _, n := range sizes {
		db := reconcilertest.NewDB(b)
		seedPaid(b, db, "h", 1_000_000_000, n, time.Now().Add(-60*24*time.Hour), time.Second)
		seedPaid(b, db, "r", 2_000_000_000, 12_000, time.Now().Add(-grace-time.Minute), 5*time.Millisecond)
		own := store.New(db.Pool)
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			var checked, streamed int
			for b.Loop() {
				b.StopTimer()
				db.Exec(b, `DELETE FROM reconciler.sweep_state`)
				s, _, _ := newSweeper(b, db, sweep.Config{PageSize: 500, Overlap: time.Minute, FullSlice: 1})
				b.StartTimer()
				res, err := s.Run(context.Background(), own)
				if err != nil {
					b.Fatal(err)
				}
				checked, streamed = res.Checked, res.Streamed
			}
			perRun[n] = b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(checked), "rows/run")
			b.ReportMetric(float64(streamed), "streamed/run")
		})
	}
	small, large := perRun[sizes[0]], perRun[sizes[1]]
	if small > 0 && large > 0 {
		fmt.Printf("sweep recent pass: history=%d %v, history=%d %v, ratio %.2f\n", sizes[0], small, sizes[1], large, float64(large)/float64(small))
	}
}
