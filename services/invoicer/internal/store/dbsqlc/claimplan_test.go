package dbsqlc

import (
	"context"
	"slices"
	"testing"

	"github.com/onceflow/onceflow/pkg/pgtest"
)

// TestDocumentClaimReadsItsBatchWhateverTheBacklog claims documents by the
// plan a prepared claim keeps when the table was analyzed with nothing due,
// its usual state, from a backlog of 500 due documents (a provider back
// from an outage): the claim must read its batch, not the backlog, and take
// the oldest. Ordered by an index of due_at alone, this plan sorted every
// due document to take a batch.
func TestDocumentClaimReadsItsBatchWhateverTheBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.GenericPlans(t, "invoicer")
	pgtest.Exec(t, pool, `ANALYZE invoicer.fiscal_documents`,
		`INSERT INTO invoicer.fiscal_documents (source_kind, source_ref, kind, event_key, reference, cfe_type, amount_minor, currency, buyer, status, due_at)
SELECT 'payment', 'pay-' || g, 'invoice', 'evt-' || g, (1000 + g)::text, 101, 12200, 'UYU', '{}', (ARRAY['pending', 'unknown', 'pending_dgi'])[1 + g % 3],
       now() - make_interval(secs => g)
FROM generate_series(1, 500) g`)
	pgtest.ClaimReadsItsBatch(t, pool, documentClaimDue, 5)
	var claimed []string
	err := pool.QueryRow(ctx, `SELECT array_agg(source_ref ORDER BY source_ref) FROM invoicer.fiscal_documents WHERE lease_token IS NOT NULL`).Scan(&claimed)
	if oldest := []string{"pay-496", "pay-497", "pay-498", "pay-499", "pay-500"}; err != nil || !slices.Equal(claimed, oldest) {
		t.Errorf("claimed %v (%v), want the five oldest due %v", claimed, err, oldest)
	}
}
