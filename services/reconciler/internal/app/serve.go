package app

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/api/openapi"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/reconciler/internal/admin"
	"github.com/onceflow/onceflow/services/reconciler/internal/deadletter"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// LeaseName is the lease, in the reconciler schema, that elects the one
// instance that reconciles on each tick.
const LeaseName = "reconciler"

// App is the reconciler's serve: its pools are open, its reconciliation
// wired and its HTTP server listening.
type App struct {
	*engine
	cfg   Config
	log   *zap.Logger
	srv   *httpserver.Server
	group *worker.Group
	lease *lease.Lease
	held  atomic.Int64 // the lease's token as of the loop's last tick; 0: not held
	// leased wakes the audit loop when the sweep loop takes the lease, so
	// the first audit, or a standby's after a takeover, need not wait out an
	// interval.
	leased chan struct{}
}

// New opens the pools and clients, wires the reconciliation and the HTTP
// server with the operator endpoints, and binds the listener (HTTP_ADDR
// 127.0.0.1:0 picks a port; see Addr). On error whatever New opened is
// closed again.
func New(ctx context.Context, cfg Config, log *zap.Logger) (_ *App, err error) {
	e, err := openEngine(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	a := &App{engine: e, cfg: cfg, log: log, leased: make(chan struct{}, 1)}
	a.srv = httpserver.New(log.Named("http"), httpserver.Addrs{Public: cfg.HTTPAddr, Admin: cfg.AdminAddr}, e.reg, e.checks()...)
	a.group = worker.NewGroup(log, worker.Config{StallAfter: stallAfter(cfg),
		HardStopAfter: cfg.ShutdownTimeout, ShutdownTimeout: cfg.ShutdownTimeout})
	a.srv.SetLiveness(a.group)
	g := a.srv.Admin(cfg.AdminToken)
	admin.New(e.reconciler, store.New(e.own), log.Named("admin")).Register(g)
	admin.NewCases(store.New(e.own), store.NewIngestReader(e.ingest), store.NewInvoicerReader(e.invoicer),
		log.Named("admin")).Register(g)
	admin.NewBoard(store.New(e.own)).Register(g)
	openapi.Serve(g, "reconciler")
	if err := a.srv.Listen(); err != nil {
		return nil, err
	}
	holder := lease.HolderID("reconciler")
	a.lease = lease.New(e.own, Schema, LeaseName, holder, leaseTTL(cfg.Interval))
	a.group.Add(func(ctx context.Context) error {
		a.loop(ctx)
		return nil
	})
	if e.audits {
		a.group.Add(func(ctx context.Context) error {
			a.audits(ctx)
			return nil
		})
	}
	dead := deadletter.New(e.sqs, cfg.DeadLetterQueues, e.reg, log.Named("deadletter"))
	a.group.Add(func(ctx context.Context) error {
		worker.Every(ctx, cfg.DeadLetterInterval, dead.Read)
		return nil
	})
	log.Info("reconciling", zap.String("holder", holder), zap.Duration("interval", cfg.Interval))
	return a, nil
}

// Addr is the bound HTTP address.
func (a *App) Addr() string { return a.srv.Addr() }

// Routes returns the routes both ports serve (for the test that holds
// them to the OpenAPI document).
func (a *App) Routes() []*echo.Route { return a.srv.Routes() }

// AdminAddr is the bound admin address (ADMIN_ADDR: /admin, /metrics,
// /debug/pprof), with the port chosen when it asked for :0.
func (a *App) AdminAddr() string { return a.srv.AdminAddr() }

// Run reconciles every interval under the lease, in two loops (the sweep
// and the detectors; the audits, when on), and serves the operational
// endpoints until ctx ends, then shuts down in two phases (worker.Group):
// first readiness fails and the loop stops taking new runs while an
// in-flight run finishes (cut short after SHUTDOWN_TIMEOUT); then the HTTP
// server and the pools close. /healthz fails when the loop stops ticking.
func (a *App) Run(ctx context.Context) error {
	defer a.close()
	return a.group.Run(ctx, a.srv)
}

// loop runs a tick at once and then every interval until ctx ends; each run
// uses worker.InHand, which outlives ctx so that shutdown lets a run finish.
// It releases the lease on the way out, even after a hard stop, so a standby
// need not wait for its TTL.
func (a *App) loop(ctx context.Context) {
	worker.Every(ctx, a.cfg.Interval, func(ctx context.Context) {
		a.tick(worker.InHand(ctx))
	})
	token := a.held.Swap(0)
	if token == 0 {
		return
	}
	release, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := a.lease.Release(release, token); err != nil {
		a.log.Warn("release lease", zap.Error(err))
	}
}

// tick takes or renews the lease and, when it holds it, reconciles once. It
// keeps the token held, or 0, in a.held, and wakes the audit loop when the
// token is new. Failures are logged and counted; the next tick tries again.
//
// The lease is not a fence here: the sweep writes only its own runs rows and
// SQS, and a second instance that reconciles while a slow run outlives the
// TTL only sends some events twice, which the invoicer ignores.
func (a *App) tick(ctx context.Context) {
	token, ok, err := a.lease.Acquire(ctx)
	if err != nil {
		a.held.Store(0)
		a.metrics.Failed()
		a.log.Warn("acquire lease", zap.Error(err))
		return
	}
	if !ok {
		a.held.Store(0)
		a.metrics.Skipped()
		a.log.Debug("another instance holds the lease")
		return
	}
	if a.held.Swap(token) != token {
		a.log.Info("took the reconciler lease", zap.Int64("token", token))
		select {
		case a.leased <- struct{}{}:
		default:
		}
	}
	_, _ = a.reconciler.Run(ctx, reconcile.PartSweep) // logged and counted by Run
}

// audits runs the audits, when the sweep loop's last tick held the lease,
// an interval after the last run ended or as soon as that loop takes the
// lease, until ctx ends. It is a loop of its own: a listing may take hours
// at its pace, during which the sweep goes on and keeps the lease. The
// audit beats at each of the provider's answers, so a long listing is not
// taken for a stalled loop. Should the lease pass to another instance
// meanwhile, both audit for a while, which only lists some documents twice.
func (a *App) audits(ctx context.Context) {
	for ctx.Err() == nil {
		worker.Beat(ctx)
		if a.held.Load() != 0 {
			_, _ = a.reconciler.Run(worker.InHand(ctx), reconcile.PartAudit) // logged and counted by Run
		}
		worker.Wait(ctx, a.leased, a.cfg.Interval)
	}
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
