package pspcalls

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// BatchStore writes calls one at a time and many in one statement;
// *store.Store is one.
type BatchStore interface {
	Recorder
	RecordPSPFetches(ctx context.Context, fs []store.PSPFetch) error
}

// queueSize is how many calls a Batcher holds between two writes; a call
// beyond it is written at once.
const queueSize = 4096

// Batcher is a Recorder that writes the calls in batches, one statement a
// batch, instead of one statement and one commit per call: RecordPSPFetch
// queues the call and Run writes what is queued every interval. The
// records are for the trace and best effort already (a failed write is
// logged, the call still answered); a queued one is lost only when the
// process dies before the next write. While the queue is full, and once
// Run has returned, a call is written at once.
type Batcher struct {
	st    BatchStore
	log   *zap.Logger
	every time.Duration
	queue chan store.PSPFetch

	mu      sync.RWMutex
	stopped bool // Run has taken the last batch: write at once
}

// NewBatcher returns a batcher writing to st every interval once Run runs.
func NewBatcher(st BatchStore, log *zap.Logger, every time.Duration) *Batcher {
	return &Batcher{st: st, log: log, every: every, queue: make(chan store.PSPFetch, queueSize)}
}

// RecordPSPFetch queues f for the next write, or writes it at once when the
// queue is full or Run has returned.
func (b *Batcher) RecordPSPFetch(ctx context.Context, f store.PSPFetch) error {
	b.mu.RLock()
	queued := false
	if !b.stopped {
		select {
		case b.queue <- f:
			queued = true
		default:
		}
	}
	b.mu.RUnlock()
	if queued {
		return nil
	}
	return b.st.RecordPSPFetch(ctx, f)
}

// Run writes the queued calls every interval until ctx ends, then the ones
// left; later calls are written one by one. It is a worker.Loop.
func (b *Batcher) Run(ctx context.Context) error {
	worker.Every(ctx, b.every, func(context.Context) { b.write(b.take()) })
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.write(b.take())
	return nil
}

// take empties the queue.
func (b *Batcher) take() []store.PSPFetch {
	var fs []store.PSPFetch
	for {
		select {
		case f := <-b.queue:
			fs = append(fs, f)
		default:
			return fs
		}
	}
}

// write records fs in one statement, even after Run's context ended.
func (b *Batcher) write(fs []store.PSPFetch) {
	if len(fs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := b.st.RecordPSPFetches(ctx, fs); err != nil {
		b.log.Warn("record PSP calls", zap.Int("calls", len(fs)), zap.Error(err))
	}
}
