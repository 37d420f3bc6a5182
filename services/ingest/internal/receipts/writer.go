// Package receipts writes webhook receipts with group commit: receipts
// that arrive while an earlier commit is in flight are inserted together
// and committed once, and each caller is answered only after that commit.
// At low load a receipt is written alone, as soon as it arrives; under load
// one WAL flush makes many receipts durable instead of one.
package receipts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Writer inserts receipts, grouping concurrent ones into one transaction.
// It has no goroutine of its own: a caller whose receipt is waiting takes
// a free writer slot and commits everything queued, its own and others'.
type Writer struct {
	pool    *pgxpool.Pool
	queries *store.Queries
	max     int
	slots   chan struct{} // at most cap(slots) transactions in flight
	queue   chan *request
	sizes   prometheus.Histogram
}

type request struct {
	params store.ReceiptInsertParams
	done   chan result
}

type result struct {
	inserted bool
	err      error
}

// New returns a writer with at most writers transactions in flight, each
// of at most max receipts.
func New(pool *pgxpool.Pool, reg prometheus.Registerer, writers, max int) *Writer {
	w := &Writer{pool: pool, queries: store.New(pool), max: max,
		slots: make(chan struct{}, writers),
		queue: make(chan *request, writers*max),
		sizes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "onceflow_ingest_receipt_commit_size", Help: "Receipts made durable by one commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 8),
		})}
	reg.MustRegister(w.sizes)
	return w
}

// Insert records p and reports whether it is new (false: a receipt with
// its scope and dedupe key exists). It returns once the receipt is
// committed, or with ctx's error; a receipt whose caller gave up may still
// be committed, which a retried delivery then finds as a duplicate.
func (w *Writer) Insert(ctx context.Context, p store.ReceiptInsertParams) (inserted bool, err error) {
	req := &request{params: p, done: make(chan result, 1)}
	select {
	case w.queue <- req:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	for {
		select {
		case r := <-req.done:
			return r.inserted, r.err
		case w.slots <- struct{}{}:
			w.flush(context.WithoutCancel(ctx))
			<-w.slots
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// flush commits what is queued, up to max receipts, and answers each.
func (w *Writer) flush(ctx context.Context) {
	batch := w.take()
	if len(batch) == 0 {
		return
	}
	w.sizes.Observe(float64(len(batch)))
	if err := w.commit(ctx, batch); err != nil {
		// One bad receipt must not fail the others: write each alone.
		for _, r := range batch {
			if err := w.commit(ctx, []*request{r}); err != nil {
				r.done <- result{err: err}
			}
		}
	}
}

// take empties the queue without waiting, up to max receipts.
func (w *Writer) take() []*request {
	var batch []*request
	for len(batch) < w.max {
		select {
		case r := <-w.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// commit inserts batch in one transaction, in key order so two concurrent
// batches holding the same keys cannot deadlock, and answers each request
// once the transaction has committed. On error nobody is answered.
func (w *Writer) commit(ctx context.Context, batch []*request) error {
	slices.SortFunc(batch, func(a, b *request) int {
		return cmp.Or(cmp.Compare(a.params.Scope, b.params.Scope), cmp.Compare(a.params.DedupeKey, b.params.DedupeKey))
	})
	params := make([]store.ReceiptInsertParams, len(batch))
	for i, r := range batch {
		params[i] = r.params
	}
	inserted := make([]bool, len(batch))
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var errs []error
		w.queries.WithTx(tx).ReceiptInsert(ctx, params).QueryRow(func(i int, _ int64, err error) {
			switch {
			case err == nil:
				inserted[i] = true
			case !errors.Is(err, pgx.ErrNoRows):
				errs = append(errs, err)
			}
		})
		return errors.Join(errs...)
	})
	if err != nil {
		return fmt.Errorf("insert receipt: %w", err)
	}
	for i, r := range batch {
		r.done <- result{inserted: inserted[i]}
	}
	return nil
}
