package store

import (
	"context"
	"sync"
	"time"

	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// receiptGroup inserts the receipts of concurrent callers together: one
// statement and one commit for all that arrived while an insert was under
// way, where each would have paid its own (a webhook is answered only
// after its receipt commits, so each commit is a WAL flush someone waits
// for). A caller alone inserts at once. At most flushers inserts run at a
// time, each of at most max receipts; a caller queued behind them is
// inserted by the next to end, or becomes an inserter itself.
type receiptGroup struct {
	q        *dbsqlc.Queries
	flushers int
	max      int
	handoff  *Handoff // nil: receipts are inserted unclaimed

	mu       sync.Mutex
	pending  []*queuedReceipt
	flushing int
}

// queuedReceipt is one caller's receipt (stored, and its body as
// received) and, once done is closed, its outcome; lead tells the caller
// to insert a batch itself.
type queuedReceipt struct {
	r        NewReceipt
	body     []byte
	inserted bool
	err      error
	done     chan struct{}
	lead     chan struct{}
}

func newReceiptGroup(q *dbsqlc.Queries, flushers, max int) *receiptGroup {
	return &receiptGroup{q: q, flushers: flushers, max: max}
}

// insert records r with whatever other receipts are waiting; it reports
// false, and changes nothing, when r's scope and dedupe key are held. The
// statement runs on ctx without its cancellation: others' receipts ride on
// it, and it is bounded by the database's own timeouts.
func (g *receiptGroup) insert(ctx context.Context, r NewReceipt) (bool, error) {
	w := &queuedReceipt{r: r.stored(), body: r.Body, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, w)
	if g.flushing < g.flushers {
		g.flushing++
		w.lead <- struct{}{}
	}
	g.mu.Unlock()
	select {
	case <-w.lead:
		g.lead(context.WithoutCancel(ctx), w)
	case <-w.done:
		// Another inserter took w before w's turn came: a turn handed to w
		// while it was still waiting is passed on.
		select {
		case <-w.lead:
			g.passOn()
		default:
		}
	}
	return w.inserted, w.err
}

// lead inserts the waiting receipts, a batch at a time, until w's is done,
// then passes the turn on.
func (g *receiptGroup) lead(ctx context.Context, w *queuedReceipt) {
	for {
		batch := g.take()
		if len(batch) == 0 {
			<-w.done // in another inserter's batch
			break
		}
		g.flush(ctx, batch)
		if isClosed(w.done) {
			break
		}
	}
	g.passOn()
}

// take removes the next batch from the waiting receipts.
func (g *receiptGroup) take() []*queuedReceipt {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := min(len(g.pending), g.max)
	batch := g.pending[:n:n]
	g.pending = g.pending[n:]
	return batch
}

// passOn hands an ending inserter's turn to the first waiting caller; with
// none waiting, or the first holding a turn already, the turn ends.
func (g *receiptGroup) passOn() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) > 0 {
		select {
		case g.pending[0].lead <- struct{}{}:
			return
		default:
		}
	}
	g.flushing--
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// flush inserts batch in one statement; should it fail, each receipt is
// inserted alone, so an error is only its own receipt's. Of two receipts
// under one key the first is inserted and the second is a duplicate. With
// room in the handoff the batch is inserted claimed and handed to the worker.
func (g *receiptGroup) flush(ctx context.Context, batch []*queuedReceipt) {
	defer func() {
		for _, w := range batch {
			close(w.done)
		}
	}()
	var p dbsqlc.ReceiptInsertManyParams
	first := make(map[[2]string]*queuedReceipt, len(batch))
	for _, w := range batch {
		r := w.r
		if first[r.key()] != nil {
			continue
		}
		first[r.key()] = w
		p.Sources, p.Scopes, p.Kinds = append(p.Sources, r.Source), append(p.Scopes, r.Scope), append(p.Kinds, r.Kind)
		p.DedupeKeys, p.EventIds = append(p.DedupeKeys, r.DedupeKey), append(p.EventIds, r.EventID)
		p.EventTypes, p.Bodies = append(p.EventTypes, r.EventType), append(p.Bodies, r.Body)
		p.BodiesDeflated = append(p.BodiesDeflated, r.deflated)
		p.Traceparents = append(p.Traceparents, r.Traceparent)
	}
	n, leasedAt := len(first), time.Now()
	if g.handoff != nil && g.handoff.Reserve(n) {
		token := g.handoff.Token()
		p.LeaseToken, p.LeaseSeconds = &token, g.handoff.Lease().Seconds()
	}
	rows, err := g.q.ReceiptInsertMany(ctx, p)
	var handed []Receipt
	defer func() {
		if p.LeaseToken != nil {
			g.handoff.Fill(n, handed, leasedAt)
		}
	}()
	if err != nil {
		for _, w := range batch {
			w.inserted, w.err = insertReceipt(ctx, g.q, w.r)
		}
		return
	}
	for _, row := range rows {
		w := first[[2]string{row.Scope, row.DedupeKey}]
		w.inserted = true
		if p.LeaseToken != nil {
			r := w.r
			handed = append(handed, Receipt{ID: row.ID, Source: r.Source, Scope: r.Scope, Kind: r.Kind, EventID: r.EventID,
				EventType: r.EventType, Body: w.body, ReceivedAt: row.ReceivedAt, Traceparent: r.Traceparent})
		}
	}
}
