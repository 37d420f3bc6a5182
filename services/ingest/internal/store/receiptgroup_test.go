package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
)

// groupEnv is a migrated ingest database and a store over it.
func groupEnv(t *testing.T) (*Store, *pgxpool.Pool) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	if err := db.Migrate(context.Background(), dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return New(pool), pool
}

// outcome is one caller's result.
type outcome struct {
	key      string
	inserted bool
	err      error
}

// queueBehindLock starts one insert per receipt while the receipts table is
// locked, waits until the ones the inserters could not take are queued,
// then releases the lock and returns every outcome.
func queueBehindLock(t *testing.T, st *Store, pool *pgxpool.Pool, receipts []NewReceipt) []outcome {
	t.Helper()
	ctx := context.Background()
	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `LOCK TABLE ingest.webhook_receipts IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	out := make([]outcome, len(receipts))
	var wg sync.WaitGroup
	for i, r := range receipts {
		wg.Go(func() {
			ok, err := st.InsertReceipt(ctx, r)
			out[i] = outcome{r.DedupeKey, ok, err}
		})
		if i < receiptInserters {
			waitFor(st.receipts, i+1, 0) // each of the first ones takes its own batch of one
		}
	}
	waitFor(st.receipts, receiptInserters, len(receipts)-receiptInserters)
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return out
}

// waitFor returns once g has inserters inserting and queued receipts
// waiting.
func waitFor(g *receiptGroup, inserters, queued int) {
	for {
		g.mu.Lock()
		done := g.flushing == inserters && len(g.pending) == queued
		g.mu.Unlock()
		if done {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func receipt(key string) NewReceipt {
	return NewReceipt{Source: "dlocal", Scope: "dlocal", Kind: "psp", DedupeKey: key, EventID: key, EventType: "payment", Body: []byte(`{}`)}
}

// Receipts that arrive while the inserters are busy are inserted together
// (one transaction, so one xmin), each caller told whether its own was new:
// of two under one key, one.
func TestConcurrentReceiptsAreInsertedTogether(t *testing.T) {
	st, pool := groupEnv(t)
	var rs []NewReceipt
	for i := range 20 {
		rs = append(rs, receipt(fmt.Sprintf("k-%d", i)))
	}
	rs = append(rs, receipt("k-3"), receipt("k-17")) // duplicates, queued behind the first ones
	out := queueBehindLock(t, st, pool, rs)
	inserted := map[string]int{}
	for _, o := range out {
		if o.err != nil {
			t.Fatalf("insert %s: %v", o.key, o.err)
		}
		if o.inserted {
			inserted[o.key]++
		}
	}
	if len(inserted) != 20 || inserted["k-3"] != 1 || inserted["k-17"] != 1 {
		t.Fatalf("inserted %v, want each of the 20 keys once", inserted)
	}
	var rows, transactions int
	if err := pool.QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT xmin::text) FROM ingest.webhook_receipts`).Scan(&rows, &transactions); err != nil {
		t.Fatal(err)
	}
	if rows != 20 || transactions != receiptInserters+1 {
		t.Fatalf("%d rows in %d transactions, want 20 in %d (one each for the first %d, one for the rest)",
			rows, transactions, receiptInserters+1, receiptInserters)
	}
}

// A receipt the database refuses fails alone: the others of its batch are
// inserted.
func TestARefusedReceiptFailsAlone(t *testing.T) {
	st, pool := groupEnv(t)
	bad := receipt("bad")
	bad.Body = nil // NOT NULL
	rs := []NewReceipt{receipt("a"), receipt("b"), receipt("c"), bad, receipt("d")}
	for _, o := range queueBehindLock(t, st, pool, rs) {
		if (o.err != nil) != (o.key == "bad") || (o.err == nil && !o.inserted) {
			t.Fatalf("insert %s: inserted %v, err %v; want only bad to fail", o.key, o.inserted, o.err)
		}
	}
}

// Many callers at once, over and over, all return: no turn to insert is
// lost between callers.
func TestEveryConcurrentCallerReturns(t *testing.T) {
	st, _ := groupEnv(t)
	for round := range 50 {
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				if _, err := st.InsertReceipt(context.Background(), receipt(fmt.Sprintf("r%d-%d", round, i%8))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	var n int
	if err := st.pool.QueryRow(context.Background(), `SELECT count(*) FROM ingest.webhook_receipts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 50*8 {
		t.Fatalf("%d receipts, want %d", n, 50*8)
	}
}

// A receipt another transaction inserts while a batch waits behind it is
// left out of the batch once that transaction commits (ON CONFLICT): its
// caller hears it was held, and the batch's other receipt is new.
func TestABatchMeetingAReceiptInsertedMeanwhileLeavesItOut(t *testing.T) {
	st, pool := groupEnv(t)
	ctx := context.Background()
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx)
	if _, err := other.Exec(ctx, `INSERT INTO ingest.webhook_receipts (source, scope, kind, dedupe_key, event_id, event_type, body)
VALUES ('dlocal', 'dlocal', 'psp', 'k-held', 'k-held', 'payment', '\x7b7d')`); err != nil {
		t.Fatal(err)
	}
	batch := []*queuedReceipt{
		{r: receipt("k-new").stored(), done: make(chan struct{})},
		{r: receipt("k-held").stored(), done: make(chan struct{})},
	}
	flushed := make(chan struct{})
	go func() {
		st.receipts.flush(ctx, batch)
		close(flushed)
	}()
	pgtest.WaitBlocked(t, pool, "ReceiptInsertMany")
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-flushed
	if batch[0].err != nil || !batch[0].inserted || batch[1].err != nil || batch[1].inserted {
		t.Fatalf("k-new inserted %v (%v), k-held inserted %v (%v); want k-new new and k-held held",
			batch[0].inserted, batch[0].err, batch[1].inserted, batch[1].err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d receipts (%v), want 2", n, err)
	}
}
