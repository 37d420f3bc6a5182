package poller

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// fakePSP answers payments with status PENDING and searches with nothing,
// after call runs.
type fakePSP struct {
	mu    sync.Mutex
	calls int
	call  func(ctx context.Context, n int) error
}

func (f *fakePSP) Payment(ctx context.Context, id string) (psp.Payment, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if err := f.call(ctx, n); err != nil {
		return psp.Payment{}, err
	}
	return psp.Payment{ID: id, Status: "PENDING"}, nil
}

func (f *fakePSP) PaymentsOfOrder(ctx context.Context, _ string) ([]psp.Payment, error) {
	_, err := f.Payment(ctx, "")
	return nil, err
}

func (f *fakePSP) Refund(context.Context, string) (psp.Refund, error) {
	return psp.Refund{}, context.Canceled
}

func (f *fakePSP) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// newPoller returns a poller over a fresh database holding n unsettled
// orders, due at once, polling concurrency of them at a time.
func newPoller(t *testing.T, n int, p *fakePSP, roundTimeout time.Duration, concurrency int) *Poller {
	t.Helper()
	st := store.New(pgtest.NewPool(t, "ingest"))
	c, err := st.InsertCustomer(t.Context(), store.Customer{DocType: "OTHER", DocCountry: "UY", DocNumber: "ABC", LegalName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := "D-" + string(rune('a'+i))
		if _, err := st.InsertOrder(t.Context(), store.Order{MerchantOrderID: "m-" + id, CustomerID: c.ID, AmountMinor: 100,
			Currency: "UYU", Lines: []byte("[]"), PSPPaymentID: &id}); err != nil {
			t.Fatal(err)
		}
	}
	return New(st, []Target{{Scope: "dlocal", PSP: p}}, zaptest.NewLogger(t), prometheus.NewRegistry(), Config{
		After: -time.Minute, Every: time.Hour, GiveUp: time.Hour, PaidGiveUp: time.Hour, Interval: time.Hour, Batch: 10, Concurrency: concurrency, RoundTimeout: roundTimeout,
	}, make(chan struct{}, 1))
}

// A PSP that takes the call and never answers costs one round its bound,
// not a batch of call timeouts: the round ends and the rest wait.
func TestRoundIsBoundedByTime(t *testing.T) {
	t.Parallel()
	hang := &fakePSP{call: func(ctx context.Context, _ int) error {
		<-ctx.Done() // a PSP that never answers; only the round's bound ends the call
		return ctx.Err()
	}}
	p := newPoller(t, 3, hang, 200*time.Millisecond, 1)
	done := make(chan error, 1)
	go func() {
		_, err := p.Round(t.Context())
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Round: %v", err)
		}
	case <-time.After(time.Minute): // a guard against hanging, not a measurement
		t.Fatal("Round did not end: it has no time bound")
	}
	if n := hang.count(); n != 1 {
		t.Fatalf("PSP calls = %d, want 1 (the calls after the bound are left to the next round)", n)
	}
}

// idleServer is a worker.Server with nothing to serve.
type idleServer struct{ stop chan struct{} }

func (s idleServer) Addr() string                   { return "none" }
func (s idleServer) Serve() error                   { <-s.stop; return nil }
func (s idleServer) Drain()                         {}
func (s idleServer) Shutdown(context.Context) error { close(s.stop); return nil }

// The poller beats its heartbeat before every PSP call: at each call, the
// last beat is later than the end of the call before, so a long round of
// slow calls is not taken for a stall.
func TestRoundBeatsPerCall(t *testing.T) {
	t.Parallel()
	const stallAfter = time.Hour
	g := worker.NewGroup(zaptest.NewLogger(t), worker.Config{StallAfter: stallAfter, ShutdownTimeout: time.Second})
	var prevEnd time.Time
	stale := make(chan int, 10)
	pspFake := &fakePSP{call: func(_ context.Context, n int) error {
		// Stalled at prevEnd + StallAfter means no beat since prevEnd.
		if n > 1 && g.Stalled(prevEnd.Add(stallAfter).Add(time.Nanosecond)) != nil {
			stale <- n
		}
		prevEnd = time.Now().Add(-time.Microsecond)
		return nil
	}}
	p := newPoller(t, 4, pspFake, time.Minute, 1)
	rounds := make(chan struct{})
	g.Add(func(ctx context.Context) error {
		worker.Beat(ctx)
		_, err := p.Round(ctx)
		close(rounds)
		<-ctx.Done()
		return err
	})
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- g.Run(ctx, idleServer{stop: make(chan struct{})}) }()
	<-rounds
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	close(stale)
	for n := range stale {
		t.Errorf("call %d: no heartbeat since the call before", n)
	}
	if n := pspFake.count(); n != 8 {
		t.Fatalf("PSP calls = %d, want 8 (per order, a search that finds nothing and a fetch of its linked payment)", n)
	}
}

// A round polls Concurrency orders at once: four searches that each wait
// until all four are in flight end, where one at a time would wait out
// the round's bound (a minute) and record nothing.
func TestRoundPollsOrdersAtOnce(t *testing.T) {
	t.Parallel()
	const orders = 4
	var arrived sync.WaitGroup
	arrived.Add(orders)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	together := &fakePSP{call: func(ctx context.Context, n int) error {
		if n > orders {
			return nil // the fetches by id after the searches
		}
		arrived.Done()
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	p := newPoller(t, orders, together, time.Minute, orders)
	recorded, err := p.Round(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if recorded != orders {
		t.Fatalf("recorded %d receipts, want %d (each order's linked payment, PENDING): the searches did not run at once", recorded, orders)
	}
}
