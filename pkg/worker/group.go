// Package worker is the lifecycle of a service's background loops: a Loop
// beats a heartbeat (Beat) so a stuck one shows as stalled, DrainThenWait,
// ClaimThenWork (one claimer, several workers) and Every are the shapes a
// loop body takes, and a Group runs the
// loops beside the HTTP server and stops them in two phases (river's soft
// and hard stop): first the loops stop taking work and finish what they
// hold, then the HTTP server drains.
package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Loop is a background worker that runs until its context ends; it calls
// Beat(ctx) once per iteration so the Group can tell it is not stuck. An
// error it returns before its context ends stops the whole Group.
type Loop func(ctx context.Context) error

// Server is the HTTP side of a process as a Group drives it;
// *httpserver.Server satisfies it.
type Server interface {
	// Addr is the address served, for the log.
	Addr() string
	// Serve serves until Shutdown.
	Serve() error
	// Drain makes readiness fail so no new work is routed here.
	Drain()
	// Shutdown waits for in-flight requests until ctx ends.
	Shutdown(ctx context.Context) error
}

// Config tunes a Group.
type Config struct {
	// StallAfter is how long a loop that has beaten may go without beating
	// before Stalled reports it (DefaultStallAfter when zero).
	StallAfter time.Duration
	// HardStopAfter bounds the first phase of shutdown: once it has run,
	// the contexts InHand returned are cancelled. Zero waits for the loops
	// as long as they take.
	HardStopAfter time.Duration
	// ShutdownTimeout bounds the second phase: in-flight HTTP requests.
	ShutdownTimeout time.Duration
}

// Group runs a process's loops beside its HTTP server, watches their
// heartbeats and stops them in two phases.
type Group struct {
	log   *zap.Logger
	cfg   Config
	loops []Loop
	beats beats
}

// NewGroup returns an empty group; Add its loops, then Run it.
func NewGroup(log *zap.Logger, cfg Config) *Group {
	g := &Group{log: log, cfg: cfg}
	g.beats.stallAfter = cfg.StallAfter
	return g
}

// Add adds loops to the group; call it before Run.
func (g *Group) Add(loops ...Loop) { g.loops = append(g.loops, loops...) }

// Stalled returns an error naming the first loop that beat and then has
// not beaten for the stall timeout at now, or nil when every loop is
// alive (a loop that never beat is not held against the process). It is
// what /healthz asks.
func (g *Group) Stalled(now time.Time) error { return g.beats.stalled(now) }

// Run serves srv (which should already be listening) and runs the loops
// until ctx ends or one of them or the server fails, then shuts down in two
// phases: first readiness turns unready, the loops' context is cancelled
// and they are waited for (a loop finishes the item in hand or abandons it
// to its claim's expiry; after HardStopAfter, if set, InHand contexts are
// cancelled too), then the HTTP server drains in-flight requests for at
// most ShutdownTimeout. The error is the failure that ended the run, if
// any, joined with the server's shutdown error. Closing pools is the
// caller's job, after Run returns.
func (g *Group) Run(ctx context.Context, srv Server) error {
	soft, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	hard, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()
	failed := make(chan error, len(g.loops)+1)
	done := g.start(context.WithValue(soft, hardKey{}, hard), failed)
	go func() {
		if err := srv.Serve(); err != nil {
			failed <- err
		}
	}()
	g.log.Info("serving", zap.String("addr", srv.Addr()))
	var cause error
	select {
	case <-ctx.Done():
	case cause = <-failed:
	}
	g.log.Info("shutting down: draining")
	srv.Drain()
	stopLoops()
	g.wait(done, hardStop)
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.ShutdownTimeout)
	defer cancel()
	return errors.Join(cause, srv.Shutdown(shutCtx))
}

// start runs every loop with its own heartbeat under ctx; a loop's error
// before ctx ends goes to failed. done is closed when all have returned.
func (g *Group) start(ctx context.Context, failed chan<- error) (done <-chan struct{}) {
	var wg sync.WaitGroup
	for i, loop := range g.loops {
		loopCtx := g.beats.watch(ctx, fmt.Sprintf("loop %d", i+1))
		wg.Go(func() {
			if err := loop(loopCtx); err != nil && ctx.Err() == nil {
				failed <- err
			}
		})
	}
	all := make(chan struct{})
	go func() {
		wg.Wait()
		close(all)
	}()
	return all
}

// wait waits for the loops to return; past HardStopAfter it cancels their
// work in hand with hardStop and waits on.
func (g *Group) wait(done <-chan struct{}, hardStop context.CancelFunc) {
	if g.cfg.HardStopAfter <= 0 {
		<-done
		return
	}
	t := time.NewTimer(g.cfg.HardStopAfter)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		g.log.Warn("loops did not finish their work in hand in time; cancelling it")
		hardStop()
		<-done
	}
}

type hardKey struct{}

// InHand returns a context for the work a loop holds when the stop comes:
// it keeps ctx's values but not its cancellation, and ends only at its
// Group's hard stop (Config.HardStopAfter). Outside a Group it is
// context.WithoutCancel(ctx).
func InHand(ctx context.Context) context.Context {
	detached := context.WithoutCancel(ctx)
	hard, ok := ctx.Value(hardKey{}).(context.Context)
	if !ok {
		return detached
	}
	return inHand{Context: detached, hard: hard}
}

// inHand has the values of its Context and the end of hard.
type inHand struct {
	context.Context
	hard context.Context
}

func (c inHand) Deadline() (time.Time, bool) { return c.hard.Deadline() }
func (c inHand) Done() <-chan struct{}       { return c.hard.Done() }
func (c inHand) Err() error                  { return c.hard.Err() }
