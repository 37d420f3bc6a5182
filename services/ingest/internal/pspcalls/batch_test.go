package pspcalls_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/services/ingest/internal/pspcalls"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Every call queued while the batcher runs is in the table once Run has
// returned, the ones left in the queue included, each at the time it was
// made; a call after that is written at once.
func TestBatcherWritesEveryCall(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	if err := db.Migrate(t.Context(), dsn, "ingest"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := store.New(pool)
	b := pspcalls.NewBatcher(st, zap.NewNop(), time.Hour) // no tick after the first: only the stop writes
	ctx, stop := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- b.Run(ctx) }()
	made := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	for _, id := range []string{"P-1", "P-2", "P-3"} {
		if err := b.RecordPSPFetch(t.Context(), store.PSPFetch{PSP: "dlocal", Operation: pspcalls.OpPayment, ObjectID: id, Outcome: "found", At: made}); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if err := b.RecordPSPFetch(t.Context(), store.PSPFetch{PSP: "dlocal", Operation: pspcalls.OpPayment, ObjectID: "P-4", Outcome: "found"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.PSPFetchesOf(t.Context(), []string{"P-1", "P-2", "P-3", "P-4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("recorded %+v, want P-1 to P-4", got)
	}
	for _, f := range got[:3] {
		if !f.At.Equal(made) {
			t.Errorf("call %s recorded at %v, want when it was made, %v", f.ObjectID, f.At, made)
		}
	}
}
