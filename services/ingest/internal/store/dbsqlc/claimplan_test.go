package dbsqlc

import (
	"context"
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
