package store

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/pgtest"
)

// A document another transaction inserts while an announcement of it waits
// behind that insert fails the announcement's statement with a unique
// violation (held documents are looked up, not left to ON CONFLICT); run
// once more, it updates the row with the later news.
func TestAnAnnouncementMeetingTheDocumentInsertedMeanwhileUpdatesIt(t *testing.T) {
	st, pool := groupEnv(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	doc := Document{Reference: "ref-1", SourceKind: "payment", SourceRef: "p-1", PaymentRef: "p-1", Kind: "invoice",
		Status: "pending", CFEType: 111, AmountMinor: 1000, Currency: "UYU", EventKey: "document:ref-1:recorded", OccurredAt: at}
	other, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if err := recordDocument(ctx, st.q.WithTx(other), doc); err != nil {
		t.Fatal(err)
	}
	later := doc
	later.Status, later.Series, later.Number, later.EventKey, later.OccurredAt = "authorized", "A", 7, "document:ref-1:authorized", at.Add(time.Second)
	recorded := make(chan error, 1)
	go func() { recorded <- st.RecordDocument(ctx, later) }()
	pgtest.WaitBlocked(t, pool, "DocumentUpsertMany")
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-recorded; err != nil {
		t.Fatalf("record the later announcement: %v", err)
	}
	var status, key string
	var n int
	if err := pool.QueryRow(ctx, `SELECT status, event_key, (SELECT count(*) FROM ingest.documents) FROM ingest.documents WHERE reference = 'ref-1'`).
		Scan(&status, &key, &n); err != nil {
		t.Fatal(err)
	}
	if status != "authorized" || key != later.EventKey || n != 1 {
		t.Fatalf("held %s from %s in %d rows, want one row, authorized from %s", status, key, n, later.EventKey)
	}
}
