package outbox

import (
	"context"
	"time"
)

// Waker tells the relay that an outbox has new rows. A NOTIFY inside a
// data transaction takes PostgreSQL's notification lock until the commit
// has flushed, so concurrent commits queue behind each other instead of
// sharing a WAL flush; the Waker sends the NOTIFY on its own, after the
// commit, at most once per interval however many rows were committed. A
// lost wake costs at most the relay's fallback poll period.
type Waker struct {
	db      Querier
	t       Table
	every   time.Duration
	pending chan struct{}
}

// WakeEvery is the producers' NOTIFY interval: a wake asked during it is
// sent at its end, after the commit that asked has usually finished.
const WakeEvery = 5 * time.Millisecond

// NewWaker returns a waker for table t that sends at most one NOTIFY per
// every; run it with Run.
func NewWaker(db Querier, t Table, every time.Duration) *Waker {
	return &Waker{db: db, t: t, every: every, pending: make(chan struct{}, 1)}
}

// Wake asks for a NOTIFY; it never blocks. Call it after the transaction
// that inserted rows has committed.
func (w *Waker) Wake() {
	select {
	case w.pending <- struct{}{}:
	default:
	}
}

// Run sends the requested NOTIFYs until ctx ends.
func (w *Waker) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.pending:
		}
		t := time.NewTimer(w.every)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		// A failed NOTIFY is not retried: the relay's fallback poll finds
		// the rows anyway.
		_, _ = w.db.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, w.t.String())
	}
}
