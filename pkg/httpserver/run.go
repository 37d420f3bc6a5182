package httpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

// Loop is a background worker that runs until its context ends; it calls
// Beat(ctx) once per iteration so /healthz can tell it is not stuck.
type Loop func(ctx context.Context) error

// Run serves s and runs loops until ctx ends or one of them fails, then shuts
// down in two phases: first /readyz turns unready and the loops' context is
// cancelled and they are waited for (a loop finishes the item in hand or
// abandons it to its claim's expiry), then the HTTP server drains
// in-flight requests for at most timeout. Closing pools is the caller's job,
// after Run returns.
func Run(ctx context.Context, s *Server, log *zap.Logger, timeout time.Duration, loops ...Loop) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	var loopsDone errgroup.Group
	failed := make(chan error, len(loops)+1)
	for i, loop := range loops {
		ctx := s.beats.watch(loopCtx, fmt.Sprintf("loop %d", i+1))
		loopsDone.Go(func() error {
			err := loop(ctx)
			if err != nil && loopCtx.Err() == nil {
				failed <- err
			}
			return err
		})
	}
	go func() {
		if err := s.Serve(); err != nil {
			failed <- err
		}
	}()
	log.Info("serving", zap.String("addr", s.Addr()))
	var cause error
	select {
	case <-ctx.Done():
	case cause = <-failed:
	}
	log.Info("shutting down: draining")
	s.Drain()
	stopLoops()
	_ = loopsDone.Wait()
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	return errors.Join(cause, s.Shutdown(shutCtx))
}
