package app

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/worker"
)

// LeaseName is the lease, in the reconciler schema, that elects the one
// instance that reconciles on each tick.
const LeaseName = "reconciler"

// serve reconciles every interval under the lease and serves the operational
// endpoints until ctx ends, then shuts down in two phases (worker.Group):
// first readiness fails and the loop stops taking new runs while an
// in-flight run finishes (cut short after SHUTDOWN_TIMEOUT); then the HTTP
// server and the pools close. /healthz fails when the loop stops ticking.
func serve(ctx context.Context) error {
	d, err := open(ctx)
	if err != nil {
		return err
	}
	defer d.close()

	srv := httpserver.New(d.log.Named("http"), d.cfg.HTTPAddr, d.reg, d.checks()...)
	group := worker.NewGroup(d.log, worker.Config{StallAfter: stallAfter(d.cfg),
		HardStopAfter: d.cfg.ShutdownTimeout, ShutdownTimeout: d.cfg.ShutdownTimeout})
	srv.SetLiveness(group)
	d.registerAdmin(srv.Echo())
	srv.Profiling(d.cfg.AdminToken)
	if err := srv.Listen(); err != nil {
		return err
	}
	holder := lease.HolderID("reconciler")
	l := lease.New(d.own, Schema, LeaseName, holder, leaseTTL(d.cfg.Interval))
	group.Add(func(ctx context.Context) error {
		d.loop(ctx, l)
		return nil
	})
	d.log.Info("reconciling", zap.String("holder", holder), zap.Duration("interval", d.cfg.Interval))
	return group.Run(ctx, srv)
}

// loop runs a tick at once and then every interval until ctx ends; each run
// uses worker.InHand, which outlives ctx so that shutdown lets a run finish.
// It releases the lease on the way out, even after a hard stop, so a standby
// need not wait for its TTL.
func (d *deps) loop(ctx context.Context, l *lease.Lease) {
	var token int64
	worker.Every(ctx, d.cfg.Interval, func(ctx context.Context) {
		token = d.tick(worker.InHand(ctx), l, token)
	})
	if token == 0 {
		return
	}
	release, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.Release(release, token); err != nil {
		d.log.Warn("release lease", zap.Error(err))
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

// stallAfter is how long the loop may go without a tick before /healthz
// fails: LOOP_STALL_TIMEOUT, or two intervals when that is longer, since the
// loop beats once a tick.
func stallAfter(cfg Config) time.Duration { return max(cfg.StallTimeout, 2*cfg.Interval) }

// leaseTTL outlasts two ticks, so a healthy leader renews well before expiry
// and a dead one is replaced after at most two intervals (30 s at least).
func leaseTTL(interval time.Duration) time.Duration {
	return max(2*interval, 30*time.Second)
}
