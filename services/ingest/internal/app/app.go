// Package app is ingest's composition root: it reads the configuration,
// opens the pool, builds the webhook receiver, the APIs, the apply workers,
// the status poller and the pruner, and runs them until the context ends.
package app

import (
	"context"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/logging"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/ingest/internal/admin"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/housekeeping"
	"github.com/onceflow/onceflow/services/ingest/internal/httpapi"
	"github.com/onceflow/onceflow/services/ingest/internal/poller"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/sources"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// Run runs the subcommand in args: serve (default), migrate or healthcheck.
func Run(ctx context.Context, args []string) error {
	return command.Run(ctx, args, map[string]command.Func{
		"serve": func(ctx context.Context) error {
			loaded, err := config.Load[Config]()
			if err != nil {
				return err
			}
			return Serve(ctx, loaded, nil)
		},
		"migrate": db.MigrateCommand("ingest"),
	})
}

// Serve runs ingest with cfg until ctx ends. When listening is non-nil it
// receives the bound HTTP address (tests use port 0).
func Serve(ctx context.Context, loaded config.Loaded[Config], listening chan<- string) error {
	cfg := loaded.Value
	srcs, err := sources.FromEnv(cfg.SourcesFile, os.Getenv)
	if err != nil {
		return err
	}
	scope, err := sources.PSPScope(srcs)
	if err != nil {
		return err
	}
	log, err := logging.New("ingest", cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log.Info("config", loaded.Fields()...)
	stopTracing, err := tracing.Setup(ctx, "ingest")
	if err != nil {
		return err
	}
	defer func() { _ = stopTracing(context.WithoutCancel(ctx)) }()
	pool, err := pg.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	reg := httpserver.NewRegistry()
	st := store.New(pool)
	reg.MustRegister(housekeeping.NewBacklog(st))
	srv := httpserver.New(log, cfg.HTTPAddr, reg, httpserver.Check{Name: "postgres", Check: pool.Ping})
	group := worker.NewGroup(log, worker.Config{StallAfter: cfg.StallTimeout, ShutdownTimeout: cfg.ShutdownTimeout})
	srv.SetLiveness(group)
	srv.Profiling(cfg.AdminToken)
	if cfg.TLSCertFile != "" {
		if err := srv.UseTLS(cfg.TLSCertFile, cfg.TLSKeyFile); err != nil {
			return err
		}
	}
	wake := make(chan struct{}, 1)
	webhook.NewHandler(srcs, st, log.Named("webhook"), reg, wake).Register(srv.Echo())
	httpapi.New(st, cfg.APIToken).Register(srv.Echo())
	admin.New(st, log.Named("admin"), cfg.AdminToken, wake).Register(srv.Echo())

	waker := outbox.NewWaker(pool, store.Outbox, outbox.WakeEvery)
	loops := append(workers(cfg, st, log, reg, wake, waker.Wake), waker.Run)
	if scope != "" {
		client := pspClient(cfg)
		loops = append(loops, poller.New(st, client, log.Named("poller"), reg, poller.Config{
			After: cfg.PollAfter, Every: cfg.PollEvery, GiveUp: cfg.PollGiveUp, Interval: cfg.PollInterval,
			Batch: cfg.PollBatch, Scope: scope,
		}, wake).Run)
	}
	loops = append(loops, housekeeping.NewPruner(st, log.Named("prune"), reg, housekeeping.Config{
		ReceiptRetention: cfg.ReceiptRetention, IdempotencyRetention: cfg.IdempotencyRetention,
		Interval: cfg.PruneInterval, Batch: cfg.PruneBatch,
	}).Run)
	if err := srv.Listen(); err != nil {
		return err
	}
	if listening != nil {
		listening <- srv.Addr()
	}
	group.Add(loops...)
	return group.Run(ctx, srv)
}

func pspClient(cfg Config) *psp.Client {
	return psp.New(psp.Config{BaseURL: cfg.DLocalBaseURL, Login: cfg.DLocalLogin, TransKey: cfg.DLocalTransKey, SecretKey: cfg.DLocalSecretKey},
		httpclient.New(cfg.PSPTimeout))
}

// workers returns cfg.Workers apply loops sharing one worker.
func workers(cfg Config, st *store.Store, log *zap.Logger, reg prometheus.Registerer, wake chan struct{}, wakeRelay func()) []worker.Loop {
	applier := apply.NewWorker(st, pspClient(cfg), log.Named("apply"), reg, apply.Config{
		Batch: cfg.ApplyBatch, Lease: cfg.ApplyLease, Poll: cfg.ApplyPoll, MaxAttempts: cfg.ApplyMaxAttempts,
		Backoff: backoff.Policy{Base: cfg.ApplyBackoffBase, Cap: cfg.ApplyBackoffCap}, WakeRelay: wakeRelay,
	}, wake)
	loops := make([]worker.Loop, cfg.Workers)
	for i := range loops {
		loops[i] = applier.Run
	}
	return loops
}
