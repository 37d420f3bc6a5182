package app

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/lease"
)

// LeaseName is the lease, in the reconciler schema, that elects the one
// instance that reconciles on each tick.
const LeaseName = "reconciler"

// serve reconciles every interval under the lease and serves the operational
// endpoints until ctx ends, then shuts down in two phases: first readiness
// fails and the loop stops taking new runs while an in-flight run finishes
// (cut short after SHUTDOWN_TIMEOUT); then the HTTP server and the pools close.
func serve(ctx context.Context) error {
	d, err := open(ctx)
	if err != nil {
		return err
	}
	defer d.close()

	srv := httpserver.New(d.log.Named("http"), d.cfg.HTTPAddr, d.reg, d.checks()...)
	d.registerAdmin(srv.Echo())
	srv.Profiling(d.cfg.AdminToken)
	if err := srv.Listen(); err != nil {
		return err
	}
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Serve() }()

	holder := lease.HolderID("reconciler")
	l := lease.New(d.own, Schema, LeaseName, holder, leaseTTL(d.cfg.Interval))
	soft, stopTaking := context.WithCancel(ctx)
	defer stopTaking()
	work, hardStop := context.WithCancel(context.WithoutCancel(ctx))
	defer hardStop()
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		d.loop(soft, work, l)
	}()
	d.log.Info("serving", zap.String("addr", srv.Addr()), zap.String("holder", holder),
		zap.Duration("interval", d.cfg.Interval))

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-httpDone:
		if serveErr == nil {
			serveErr = errors.New("http server stopped")
		}
	}

	// Phase one: stop taking work and let an in-flight run finish.
	d.log.Info("shutting down")
	srv.Drain()
	stopTaking()
	select {
	case <-loopDone:
	case <-time.After(d.cfg.ShutdownTimeout):
		d.log.Warn("in-flight run did not finish in time; cancelling it")
		hardStop()
		<-loopDone
	}

	// Phase two: close the HTTP server; the deferred close ends the pools.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && serveErr == nil {
		serveErr = err
	}
	return serveErr
}

// loop runs a tick at once and then every interval until soft ends; each run
// uses work, which outlives soft so that shutdown lets a run finish. It
// releases the lease on the way out so a standby need not wait for its TTL.
func (d *deps) loop(soft, work context.Context, l *lease.Lease) {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	var token int64
	for {
		token = d.tick(work, l, token)
		select {
		case <-soft.Done():
			if token != 0 {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(work), 5*time.Second)
				if err := l.Release(ctx, token); err != nil {
					d.log.Warn("release lease", zap.Error(err))
				}
				cancel()
			}
			return
		case <-t.C:
		}
	}
}

// tick takes or renews the lease and, when it holds it, reconciles once. It
// returns the token held, or 0. Failures are logged and counted; the next tick
// tries again.
//
// The lease is not a fence here: the sweep writes only its own runs rows and
// SQS, and a second instance that reconciles while a slow run outlives the
// TTL only sends some events twice, which the invoicer ignores.
func (d *deps) tick(ctx context.Context, l *lease.Lease, held int64) int64 {
	token, ok, err := l.Acquire(ctx)
	if err != nil {
		d.metrics.Failed()
		d.log.Warn("acquire lease", zap.Error(err))
		return 0
	}
	if !ok {
		d.metrics.Skipped()
		d.log.Debug("another instance holds the lease")
		return 0
	}
	if token != held {
		d.log.Info("took the reconciler lease", zap.Int64("token", token))
	}
	_, _ = d.reconciler.Once(ctx) // logged and counted by Once
	return token
}

// leaseTTL outlasts two ticks, so a healthy leader renews well before expiry
// and a dead one is replaced after at most two intervals (30 s at least).
func leaseTTL(interval time.Duration) time.Duration {
	return max(2*interval, 30*time.Second)
}
