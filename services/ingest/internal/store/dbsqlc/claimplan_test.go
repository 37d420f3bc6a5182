package dbsqlc

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/pgtest"
)

// TestPollerClaimReadsWhatItTakes plans the poller's claim over 100,000
// paid orders of the last 50 minutes, every one due (a poller behind, as
// when orders come faster than it polls), and checks that it reads about
// the batch it takes, not every order within the give-up window: before
// orders_next_poll it read them all, each with a look-up of its payments.
//
//	go test -run TestPollerClaimReadsWhatItTakes -v ./services/ingest/internal/store/dbsqlc/
func TestPollerClaimReadsWhatItTakes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, "ingest")
	const orders, batch = 100_000, 50
	for _, sql := range []string{
		`INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name) VALUES ('CI', 'UY', '12345672', 'Buyer')`,
		`INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, psp_payment_id, created_at, next_poll_at)
SELECT 'order-' || g, (SELECT id FROM ingest.customers), 12200, 'UYU', 'p' || g,
       now() - interval '50 minutes' + g * (interval '40 minutes' / $1), now() - interval '40 minutes' + g * (interval '40 minutes' / $1)
FROM generate_series(1, $1) g`,
		`INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency, paid_at)
SELECT psp_payment_id, id, 'PAID', 40, 12200, 'UYU', created_at FROM ingest.orders`,
		`ANALYZE`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, orders)
		}
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	now := time.Now()
	rows, scans := pgtest.RowsRead(t, pool, orderClaimDue, (5 * time.Minute).Seconds(), (6 * time.Hour).Seconds(), now, int32(batch),
		now.Add(-time.Hour), now.Add(-72*time.Hour))
	t.Logf("claim of %d due orders of %d: %.0f rows read, by %v", batch, orders, rows, scans)
	if rows > 10*batch {
		t.Errorf("the claim of %d orders reads %.0f rows of %d due, want at most %d: %v", batch, rows, orders, 10*batch, scans)
	}
	var polled int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ingest.orders WHERE polls = 1 AND next_poll_at > now()`).Scan(&polled); err != nil || polled != batch {
		t.Errorf("orders polled and scheduled again = %d (%v), want %d", polled, err, batch)
	}
}

// TestPollerClaimOfPaidOrdersReadsEachPaymentOnce claims 1,000 paid orders past
// their paid give-up (INGEST_POLL_PAID_GIVE_UP=0s: every order leaves the
// schedule at its first look without a search) and checks that the claim
// returns none, takes them all off the schedule, and reads each one's
// payments once, to learn that it is paid: what it would search for is
// read only for the orders it returns. Reading it for every order taken
// made this claim a soak's costliest statement.
func TestPollerClaimOfPaidOrdersReadsEachPaymentOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, "ingest")
	const orders = 1000
	for _, sql := range []string{
		`INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name) VALUES ('CI', 'UY', '12345672', 'Buyer')`,
		`INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, psp_payment_id, created_at, next_poll_at)
SELECT 'order-' || g, (SELECT id FROM ingest.customers), 12200, 'UYU', 'p' || g, now() - interval '20 minutes', now() - interval '10 minutes'
FROM generate_series(1, ` + strconv.Itoa(orders) + `) g`,
		`INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency, paid_at)
SELECT psp_payment_id, id, 'PAID', 40, 12200, 'UYU', created_at FROM ingest.orders`,
		`ANALYZE`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	now := time.Now()
	read := pgtest.RowsReadFrom(t, pool, "payments", orderClaimDue, (5 * time.Minute).Seconds(), (6 * time.Hour).Seconds(), now, int32(orders),
		now, now.Add(-72*time.Hour))
	t.Logf("claim of %d paid orders: %.0f payments read", orders, read)
	if read > orders {
		t.Errorf("the claim of %d paid orders reads %.0f payments, want at most one an order (is it paid)", orders, read)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ingest.orders WHERE next_poll_at IS NOT NULL OR polls > 0`).Scan(&left); err != nil || left != 0 {
		t.Errorf("orders still scheduled or counted as polled = %d (%v), want 0", left, err)
	}
}

// TestPollerClaimOfABigBatchReadsWhatItTakes claims with a batch larger
// than the orders due, as a poller kept ahead of the rate is set
// (INGEST_POLL_BATCH twice the orders of a look), among 20,000 orders
// already off the schedule: 400 due paid orders leave it, 100 due unpaid
// ones are returned to be searched. The claim must read about the orders it
// takes and their payments, not the history: expecting the whole batch,
// the planner hashed every order and every paid payment for each look, a
// look's cost growing with the orders recorded.
func TestPollerClaimOfABigBatchReadsWhatItTakes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, "ingest")
	const history, paid, unpaid, batch = 20_000, 400, 100, 2_000
	orders := func(from, to int, due bool) string {
		next := "NULL::timestamptz"
		if due {
			next = "now() - interval '10 minutes'"
		}
		return fmt.Sprintf(`INSERT INTO ingest.orders (merchant_order_id, customer_id, amount_minor, currency, psp_payment_id, created_at, next_poll_at)
SELECT 'order-' || g, (SELECT id FROM ingest.customers), 12200, 'UYU', 'p' || g, now() - interval '20 minutes', %s
FROM generate_series(%d, %d) g`, next, from, to)
	}
	pgtest.Exec(t, pool,
		`INSERT INTO ingest.customers (doc_type, doc_country, doc_number, legal_name) VALUES ('CI', 'UY', '12345672', 'Buyer')`,
		orders(1, history, false), orders(history+1, history+paid, true),
		`INSERT INTO ingest.payments (id, order_id, status, status_rank, amount_minor, currency, paid_at)
SELECT psp_payment_id, id, 'PAID', 40, 12200, 'UYU', created_at FROM ingest.orders`,
		orders(history+paid+1, history+paid+unpaid, true),
		`ANALYZE`)
	now := time.Now()
	rows, scans := pgtest.RowsRead(t, pool, orderClaimDue, (5 * time.Minute).Seconds(), (6 * time.Hour).Seconds(), now, int32(batch),
		now, now.Add(-72*time.Hour))
	due := paid + unpaid
	t.Logf("claim of %d due orders among %d, batch %d: %.0f rows read, by %v", due, history+due, batch, rows, scans)
	if rows > float64(10*due) {
		t.Errorf("the claim of %d due orders reads %.0f rows, want at most %d: %v", due, rows, 10*due, scans)
	}
	var searched, scheduled int
	err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE polls = 1), count(*) FILTER (WHERE next_poll_at IS NOT NULL) FROM ingest.orders`).Scan(&searched, &scheduled)
	if err != nil || searched != unpaid || scheduled != unpaid {
		t.Errorf("orders searched = %d and still scheduled = %d (%v), want the %d unpaid ones", searched, scheduled, err, unpaid)
	}
}

// TestClaimsReadTheirBatchWhateverTheBacklog claims receipts and merchant
// deliveries by the plan a prepared claim keeps when the table was analyzed
// with nothing pending, its usual state, from a backlog of 500 due rows:
// each claim must read its batch, not the backlog, and take the oldest.
// Ordered by an index of next_attempt_at alone, this plan sorted every due
// row to take a batch.
func TestClaimsReadTheirBatchWhateverTheBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.GenericPlans(t, "ingest")
	pgtest.Exec(t, pool, `ANALYZE ingest.webhook_receipts`, `ANALYZE ingest.notification_deliveries`,
		`INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, event_id, event_type, body, next_attempt_at)
SELECT 'dlocal', 'dlocal', 'psp', 'key-' || g, 'evt-' || g, 'PAID', '\x7b7d', now() - make_interval(secs => g) FROM generate_series(1, 500) g`,
		`INSERT INTO ingest.notification_deliveries (event_id, event_type, payload, next_attempt_at)
SELECT 'evt-' || g, 'payment.paid', '\x7b7d', now() - make_interval(secs => g) FROM generate_series(1, 500) g`)
	oldest := []string{"evt-496", "evt-497", "evt-498", "evt-499", "evt-500"}
	for table, claim := range map[string]string{"webhook_receipts": receiptClaimDue, "notification_deliveries": deliveryClaimDue} {
		pgtest.ClaimReadsItsBatch(t, pool, claim, len(oldest))
		var claimed []string
		err := pool.QueryRow(ctx, `SELECT array_agg(event_id ORDER BY event_id) FROM ingest.`+table+` WHERE lease_token IS NOT NULL`).Scan(&claimed)
		if err != nil || !slices.Equal(claimed, oldest) {
			t.Errorf("%s claimed %v (%v), want the five oldest due %v", table, claimed, err, oldest)
		}
	}
}
