package merchanthook

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// The Standard Webhooks specification's published test vector.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func newStore(tb testing.TB) *store.Store {
	tb.Helper()
	dsn := pgtest.NewDatabase(tb)
	if err := db.Migrate(context.Background(), dsn, "ingest"); err != nil {
		tb.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return store.New(pool)
}

func queue(tb testing.TB, st *store.Store, id, payload string) {
	tb.Helper()
	if err := st.InTx(context.Background(), func(tx *store.Tx) error {
		return tx.QueueDelivery(context.Background(), id, "document.authorized", []byte(payload))
	}); err != nil {
		tb.Fatal(err)
	}
}

func newDeliverer(tb testing.TB, st *store.Store, url string, log *zap.Logger, batch int) *Deliverer {
	tb.Helper()
	d, err := New(st, log, prometheus.NewRegistry(), Config{URL: url, Secret: vectorSecret, Timeout: 5 * time.Second,
		Batch: batch, Parallel: 8, Lease: time.Minute, Poll: time.Second, MaxAttempts: 3,
		Backoff: backoff.Policy{Base: time.Hour, Cap: time.Hour}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// TestDeliverySignsWithTheSpecificationsVector: the headers the merchant
// gets for the specification's test message are its published ones, and a
// redirect is a failure, never followed.
func TestDeliverySignsWithTheSpecificationsVector(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	got := make(chan http.Header, 1)
	merchant := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer merchant.Close()
	d := newDeliverer(t, st, merchant.URL, zaptest.NewLogger(t), 10)
	d.now = func() time.Time { return time.Unix(vectorTimestamp, 0) }
	queue(t, st, vectorID, vectorPayload)

	d.Round(context.Background())
	h := <-got
	if h.Get("webhook-id") != vectorID || h.Get("webhook-timestamp") != fmt.Sprint(vectorTimestamp) || h.Get("webhook-signature") != vectorSignature {
		t.Fatalf("headers id %q, timestamp %q, signature %q; want the specification's vector", h.Get("webhook-id"),
			h.Get("webhook-timestamp"), h.Get("webhook-signature"))
	}
	del, attempts, err := st.Delivery(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if del.Status != store.DeliveryPending || del.Attempts != 1 || len(attempts) != 1 || attempts[0].HTTPStatus != http.StatusFound {
		t.Fatalf("after a 302: %+v, attempts %+v; want pending, retried later, the 302 logged", del, attempts)
	}
}

// TestALostLeaseKeepsOnlyTheAttempt: a deliverer whose lease another took
// over logs its attempt but changes nothing else.
func TestALostLeaseKeepsOnlyTheAttempt(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	queue(t, st, "document:1:authorized", "{}")
	ctx := context.Background()
	mine := uuid.New()
	if _, err := st.ClaimDeliveries(ctx, mine, -time.Second, 10); err != nil { // a lease already expired
		t.Fatal(err)
	}
	theirs := uuid.New()
	if claimed, err := st.ClaimDeliveries(ctx, theirs, time.Minute, 10); err != nil || len(claimed) != 1 {
		t.Fatalf("take-over claimed %d, %v", len(claimed), err)
	}
	status, err := st.SaveOutcome(ctx, mine, store.Outcome{Attempt: store.DeliveryAttempt{DeliveryID: 1, HTTPStatus: 204}, Delivered: true})
	if err != nil || status != "" {
		t.Fatalf("late save: status %q, %v; want nothing saved", status, err)
	}
	del, attempts, err := st.Delivery(ctx, 1)
	if err != nil || del.Status != store.DeliveryPending || len(attempts) != 1 {
		t.Fatalf("delivery %+v, attempts %d, %v; want still pending, the attempt logged", del, len(attempts), err)
	}
}

// BenchmarkDeliveries measures how many notifications a deliverer POSTs to a
// merchant on this machine answering 204 at once, each signed, logged and
// saved: PostgreSQL and the HTTP round trips, nothing else.
func BenchmarkDeliveries(b *testing.B) {
	st := newStore(b)
	var hits atomic.Int64
	merchant := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer merchant.Close()
	d := newDeliverer(b, st, merchant.URL, zap.NewNop(), 32)
	const perIteration = 500
	var sending time.Duration // the deliverer's time alone, queueing left out
	for i := 0; b.Loop(); i++ {
		for j := range perIteration {
			queue(b, st, fmt.Sprintf("document:%d:%d", i, j), `{"type":"document.authorized"}`)
		}
		start := time.Now()
		for d.Round(context.Background()) {
		}
		sending += time.Since(start)
	}
	b.ReportMetric(float64(hits.Load())/sending.Seconds(), "deliveries/s")
}
