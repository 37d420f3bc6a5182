// Package app is the invoicer's composition root: it reads the
// configuration, opens the pool and the SQS client, and runs the billing
// consumer and the emission loop until the context ends.
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
	"github.com/onceflow/onceflow/pkg/sqsq"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicy"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
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
			return db.Migrate(ctx, loaded.Value.DatabaseURL, "invoicer")
		},
	})
}

// Serve runs the invoicer until ctx ends. When listening is non-nil it
// receives the bound HTTP address (tests use port 0).
func Serve(ctx context.Context, loaded config.Loaded[Config], listening chan<- string) error {
	cfg := loaded.Value
	log, err := logging.New("invoicer", cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log.Info("config", loaded.Fields()...)
	provider, err := invoicy.New(invoicy.Config{BaseURL: cfg.InvoiCyBaseURL, EmpCodigo: cfg.InvoiCyEmpCodigo, EmpPK: cfg.InvoiCyEmpPK,
		AccessKey: cfg.InvoiCyAccessKey, Timeout: cfg.InvoiCyTimeout}, &http.Client{})
	if err != nil {
		return err
	}
	pool, err := pg.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	sqsClient, err := sqsq.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint)
	if err != nil {
		return err
	}
	billingURL, err := sqsq.QueueURL(ctx, sqsClient, cfg.BillingQueue)
	if err != nil {
		return err
	}

	reg := httpserver.NewRegistry()
	srv := httpserver.New(log, cfg.HTTPAddr, reg, httpserver.Check{Name: "postgres", Check: pool.Ping})
	queries := store.New(pool)
	con := consumer.New(sqsClient, billingURL, queries, log.Named("consumer"), reg, cfg.ConsumerWait)
	emitter := emit.New(queries, provider, invoicy.IsRefused, log.Named("emit"), reg, emit.Config{
		Batch: cfg.EmitBatch, Lease: cfg.EmitLease, Poll: cfg.EmitPoll, Settle: cfg.EmitSettle,
		Retry:   backoff.Policy{Base: cfg.EmitRetryBase, Cap: cfg.EmitRetryCap},
		DGIPoll: backoff.Policy{Base: cfg.DGIPollBase, Cap: cfg.DGIPollCap},
	})
	var loops []httpserver.Loop
	for range cfg.Consumers {
		loops = append(loops, con.Run)
	}
	for range cfg.EmitWorkers {
		loops = append(loops, emitter.Run)
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	if listening != nil {
		listening <- srv.Addr()
	}
	return httpserver.Run(ctx, srv, log, cfg.ShutdownTimeout, loops...)
}
