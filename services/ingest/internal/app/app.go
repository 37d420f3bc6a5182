// Package app is ingest's composition root: it reads the configuration,
// opens the pool, builds the webhook receiver, the API and the apply workers,
// and runs them until the context ends.
package app

import (
	"context"
	"net/http"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/logging"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/httpapi"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
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
		"migrate": func(ctx context.Context) error {
			loaded, err := config.Load[config.Common]()
			if err != nil {
				return err
			}
			return db.Migrate(ctx, loaded.Value.DatabaseURL, "ingest")
		},
	})
}

// Serve runs ingest with cfg until ctx ends. When listening is non-nil it
// receives the bound HTTP address (tests use port 0).
func Serve(ctx context.Context, loaded config.Loaded[Config], listening chan<- string) error {
	cfg := loaded.Value
	log, err := logging.New("ingest", cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log.Info("config", loaded.Fields()...)
	pool, err := pg.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	reg := httpserver.NewRegistry()
	srv := httpserver.New(log, cfg.HTTPAddr, reg, httpserver.Check{Name: "postgres", Check: pool.Ping})
	wake := make(chan struct{}, 1)
	sources := map[string]webhook.Source{"dlocal": webhook.DLocal{Login: cfg.DLocalLogin, SecretKey: cfg.DLocalSecretKey}}
	webhook.NewHandler(sources, store.New(pool), log.Named("webhook"), reg, cfg.WebhookMaxBytes, wake).Register(srv.Echo())
	httpapi.New(store.New(pool), cfg.APIToken).Register(srv.Echo())

	client := psp.New(psp.Config{BaseURL: cfg.DLocalBaseURL, Login: cfg.DLocalLogin, TransKey: cfg.DLocalTransKey, SecretKey: cfg.DLocalSecretKey},
		&http.Client{Timeout: cfg.PSPTimeout})
	worker := apply.NewWorker(pool, client, log.Named("apply"), reg, apply.Config{
		Batch: cfg.ApplyBatch, Lease: cfg.ApplyLease, Poll: cfg.ApplyPoll, MaxAttempts: cfg.ApplyMaxAttempts,
		Backoff: backoff.Policy{Base: cfg.ApplyBackoffBase, Cap: cfg.ApplyBackoffCap},
	}, wake)
	loops := make([]httpserver.Loop, cfg.Workers)
	for i := range loops {
		loops[i] = worker.Run
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	if listening != nil {
		listening <- srv.Addr()
	}
	return httpserver.Run(ctx, srv, log, cfg.ShutdownTimeout, loops...)
}
