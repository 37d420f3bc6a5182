package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// A claim sets no indexed column of a receipt: PostgreSQL counts it as a
// HOT update, which writes no index entry (counted by PostgreSQL in the
// claim's own transaction). The claimed receipt is not
// claimed again while its lease lasts, and is once the lease has ended.
func TestReceiptClaimIsHOTAndHoldsTheReceiptForItsLease(t *testing.T) {
	t.Parallel()
	st, pool := groupEnv(t)
	ctx := context.Background()
	if _, err := st.InsertReceipt(ctx, NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: "psp", DedupeKey: "payment:p-hot:PAID",
		EventID: "e-hot", EventType: "PAID", Body: []byte(`{}`), Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}); err != nil {
		t.Fatal(err)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		got, err := dbsqlc.New(tx).ReceiptClaimDue(ctx, new(uuid.New()), time.Hour.Seconds(), 10)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %d receipts, %v; want the one", len(got), err)
		}
		var updated, hot int64
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_updated('ingest.webhook_receipts'::regclass),
       pg_stat_get_xact_tuples_hot_updated('ingest.webhook_receipts'::regclass)`).Scan(&updated, &hot); err != nil {
			return err
		}
		if updated != 1 || hot != 1 {
			t.Errorf("claim: %d updates, %d of them HOT; want 1 and 1", updated, hot)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	if again, err := st.ClaimReceipts(ctx, uuid.New(), time.Hour, 10); err != nil || len(again) != 0 {
		t.Fatalf("claim under a live lease: %d receipts, %v; want none", len(again), err)
	}
	if _, err := pool.Exec(ctx, `UPDATE ingest.webhook_receipts SET lease_expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if taken, err := st.ClaimReceipts(ctx, uuid.New(), time.Hour, 10); err != nil || len(taken) != 1 {
		t.Fatalf("claim once the lease ended: %d receipts, %v; want the one", len(taken), err)
	}
}
