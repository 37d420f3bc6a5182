package sweep_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// seedHistory writes n payments paid 60 days ago and later, a second
// apart, each with its authorized invoice (only a valid document counts),
// in a few INSERT … SELECT statements. Their ids look like dLocal's ("D-4-"
// and a UUID), so the sweep's lookups probe the documents' index at random
// as they do in production, and each document carries a buyer and lines
// of a real one's size, so the table holds as many rows to a page; each
// is created a second after its payment was paid, as the pipeline would.
func seedHistory(tb testing.TB, db *reconcilertest.DB, n int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	for _, sql := range []string{
		`INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name) VALUES ('CI', 'UY', '12345672', 'Bench Buyer')`,
		`INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, psp_payment_id)
SELECT 'order-h' || g, (SELECT id FROM ingest.customers LIMIT 1), 12200, 'UYU', 'D-4-' || md5(g::text)::uuid FROM generate_series(1, $1) g`,
		`INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency, paid_at)
SELECT o.psp_payment_id, o.id, 'PAID', 40, 12200, 'UYU', now() - interval '60 days' + substr(o.merchant_order_id, 8)::int * interval '1 second'
FROM ingest.orders o WHERE o.merchant_order_id LIKE 'order-h%'`,
		`INSERT INTO invoicer.fiscal_documents (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer, lines, status, created_at)
SELECT 'payment', 'D-4-' || md5(g::text)::uuid, 'invoice', 'payment:D-4-' || md5(g::text)::uuid || ':paid', (1000000000 + g)::text, 101, 12200, 'UYU',
       jsonb_build_object('doc_type', 'CI', 'doc_country', 'UY', 'doc_number', '12345672', 'legal_name', 'Bench Buyer ' || g,
                          'address', 'Avenida 18 de Julio ' || g || ', Montevideo', 'email', 'buyer' || g || '@example.com'),
       jsonb_build_array(jsonb_build_object('name', 'Order order-h' || g, 'quantity', 1, 'unit_price_minor', 12200, 'amount_minor', 12200, 'vat', 'basic')),
       'authorized', now() - interval '60 days' + (g + 1) * interval '1 second'
FROM generate_series(1, $1) g`,
		`VACUUM ANALYZE`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, n)
		}
		if _, err := db.Pool.Exec(ctx, sql, args...); err != nil {
			tb.Fatalf("seed %d: %v", n, err)
		}
	}
	for i := range 3 { // a few recent payments whose invoice is missing
		id := fmt.Sprintf("recent-%d", i)
		db.Payment(tb, id, time.Now().Add(-15*time.Minute))
		db.Outbox(tb, reconcilertest.PaymentPaid(id))
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
