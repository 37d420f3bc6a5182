package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// fakeServer records the order of what the group asks of it; Serve returns
// serveErr at once when set, and otherwise blocks until Shutdown.
type fakeServer struct {
	mu       sync.Mutex
	events   []string
	serveErr error
	shut     chan struct{}
}

func newFakeServer() *fakeServer { return &fakeServer{shut: make(chan struct{})} }

func (s *fakeServer) record(event string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, event)
}

func (s *fakeServer) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

func (s *fakeServer) Addr() string { return "fake" }
func (s *fakeServer) Drain()       { s.record("drain") }

func (s *fakeServer) Serve() error {
	if s.serveErr != nil {
		return s.serveErr
	}
	<-s.shut
	return nil
}

func (s *fakeServer) Shutdown(context.Context) error {
	s.record("http shutdown")
	close(s.shut)
	return nil
}

// runGroup runs g with srv until ctx ends; the channel yields Run's error.
func runGroup(ctx context.Context, g *Group, srv Server) <-chan error {
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, srv) }()
	return done
}

// stoppedLoop blocks until its context ends, then records "loop stopped"
// on srv.
func stoppedLoop(srv *fakeServer, started chan<- struct{}) Loop {
	return func(ctx context.Context) error {
		Beat(ctx)
		started <- struct{}{}
		<-ctx.Done()
		srv.record("loop stopped")
		return nil
	}
}

// Run watches each loop's heartbeat by its number. The first phase of the
// stop drains readiness and stops and waits for every loop; only then does
// the HTTP server shut down.
func TestGroupStopsInTwoPhases(t *testing.T) {
	t.Parallel()
	srv, started := newFakeServer(), make(chan struct{}, 2)
	g := NewGroup(zaptest.NewLogger(t), Config{})
	g.Add(stoppedLoop(srv, started), stoppedLoop(srv, started))
	ctx, cancel := context.WithCancel(context.Background())
	done := runGroup(ctx, g, srv)
	recv(t, started, "loop 1 start")
	recv(t, started, "loop 2 start")
	if err := g.Stalled(time.Now().Add(DefaultStallAfter + time.Minute)); err == nil || !strings.Contains(err.Error(), "loop 1") {
		t.Errorf("Stalled past the default stall timeout = %v, want loop 1 named", err)
	}
	cancel()
	if err := recv(t, done, "Run's return"); err != nil {
		t.Fatalf("Run = %v", err)
	}
	want := []string{"drain", "loop stopped", "loop stopped", "http shutdown"}
	if got := srv.log(); !slices.Equal(got, want) {
		t.Errorf("shutdown order = %q, want %q", got, want)
	}
}

// A loop's failure, or the server's, ends the run in the same two phases
// and is what Run returns.
func TestGroupStopsOnAFailure(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name     string
		loopErr  error
		serveErr error
	}{
		{"a loop fails", boom, nil},
		{"the server fails", nil, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, started := newFakeServer(), make(chan struct{}, 1)
			srv.serveErr = tc.serveErr
			g := NewGroup(zaptest.NewLogger(t), Config{})
			g.Add(stoppedLoop(srv, started))
			if tc.loopErr != nil {
				g.Add(func(context.Context) error { return tc.loopErr })
			}
			err := recv(t, runGroup(context.Background(), g, srv), "Run's return")
			if !errors.Is(err, boom) {
				t.Errorf("Run = %v, want %v", err, boom)
			}
			want := []string{"drain", "loop stopped", "http shutdown"}
			if got := srv.log(); !slices.Equal(got, want) {
				t.Errorf("shutdown order = %q, want %q", got, want)
			}
		})
	}
}

// InHand outlives the soft stop; with HardStopAfter a loop still holding
// work when it runs out sees InHand's context end, and without one never.
func TestInHandEndsOnlyAtTheHardStop(t *testing.T) {
	t.Parallel()
	t.Run("without a hard stop", func(t *testing.T) {
		t.Parallel()
		srv, inHandErr := newFakeServer(), make(chan error, 1)
		g := NewGroup(zaptest.NewLogger(t), Config{})
		started := make(chan struct{}, 1)
		g.Add(func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			inHandErr <- InHand(ctx).Err()
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := runGroup(ctx, g, srv)
		recv(t, started, "loop start")
		cancel()
		recv(t, done, "Run's return")
		if err := <-inHandErr; err != nil {
			t.Errorf("work in hand cancelled by the soft stop: %v", err)
		}
	})
	t.Run("past the hard stop", func(t *testing.T) {
		t.Parallel()
		srv := newFakeServer()
		g := NewGroup(zaptest.NewLogger(t), Config{HardStopAfter: 1})
		started := make(chan struct{}, 1)
		g.Add(func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			<-InHand(ctx).Done() // a run that only a hard stop ends
			srv.record("work cancelled")
			return nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := runGroup(ctx, g, srv)
		recv(t, started, "loop start")
		cancel()
		recv(t, done, "Run's return")
		want := []string{"drain", "work cancelled", "http shutdown"}
		if got := srv.log(); !slices.Equal(got, want) {
			t.Errorf("shutdown order = %q, want %q", got, want)
		}
	})
}

// InHand keeps ctx's values, the heartbeat included, and outside a Group
// is never cancelled by ctx.
func TestInHandKeepsValues(t *testing.T) {
	t.Parallel()
	var b beats
	ctx, cancel := context.WithCancel(b.watch(context.Background(), "loop 1"))
	held := InHand(ctx)
	cancel()
	if held.Err() != nil {
		t.Errorf("InHand outside a group ended with its parent: %v", held.Err())
	}
	Beat(held)
	if b.all[0].last.Load() == 0 {
		t.Error("a beat through InHand's context was lost")
	}
}
