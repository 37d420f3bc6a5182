// Package service is the one shape of every onceflow service binary:
//
//	main:       signal context → run(ctx, os.Getenv, os.Args[1:], os.Stdout)
//	run:        service.Main(ctx, app.Spec, getenv, args, stdout)
//	serve:      config from getenv → logger on stdout → tracing → app.New(ctx, cfg, log) → App.Run(ctx)
//
// Main also gives every binary its migrate and healthcheck subcommands.
// Nothing here reads the process environment: getenv is the caller's, so a
// test can run several services side by side, each with its own settings.
package service

import (
	"context"
	"io"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/logging"
	"github.com/onceflow/onceflow/pkg/tracing"
)

// App is a built service: Run serves and runs its loops until ctx ends, then
// stops in two phases and releases what New opened.
type App interface {
	Run(ctx context.Context) error
}

// Settings is what Main needs of every service's config: the shared
// settings, which each config has by embedding config.Common.
type Settings interface {
	Shared() config.Common
}

// Command is an extra subcommand; it gets the same environment and output,
// and the arguments after its name (its flags).
type Command func(ctx context.Context, getenv config.Getenv, args []string, stdout io.Writer) error

// Spec describes one service to Main.
type Spec[C Settings, A App] struct {
	// Name names the logger, the traces and the error prefix ("ingest").
	Name string
	// Schema is the PostgreSQL schema the migrate subcommand applies.
	Schema string
	// New builds the service from its validated config: it opens pools and
	// clients, builds stores, handlers and loops, and binds the listener.
	New func(ctx context.Context, cfg C, log *zap.Logger) (A, error)
	// Commands are subcommands beyond serve, migrate and healthcheck.
	Commands map[string]Command
}

// Main runs the subcommand args[0] of spec ("serve" when args is empty).
// Errors come from the configuration (naming the variable), from start-up,
// or from the service's run.
func Main[C Settings, A App](ctx context.Context, spec Spec[C, A], getenv config.Getenv, args []string, stdout io.Writer) error {
	cmds := map[string]command.Func{
		"serve":       func(ctx context.Context) error { return serve(ctx, spec, getenv, stdout) },
		"migrate":     func(ctx context.Context) error { return migrate(ctx, spec.Schema, getenv) },
		"healthcheck": command.HealthcheckFrom(getenv),
	}
	var rest []string
	if len(args) > 1 {
		rest = args[1:]
	}
	for name, c := range spec.Commands {
		cmds[name] = func(ctx context.Context) error { return c(ctx, getenv, rest, stdout) }
	}
	return command.Run(ctx, args, cmds)
}

// serve is the composition root every service shares.
func serve[C Settings, A App](ctx context.Context, spec Spec[C, A], getenv config.Getenv, stdout io.Writer) error {
	loaded, err := config.LoadFrom[C](getenv)
	if err != nil {
		return err
	}
	log, err := logging.NewTo(stdout, spec.Name, loaded.Value.Shared().LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log.Info("config", loaded.Fields()...)
	loaded.Warn(log)
	stopTracing, err := tracing.Setup(ctx, spec.Name)
	if err != nil {
		return err
	}
	defer func() { _ = stopTracing(context.WithoutCancel(ctx)) }()
	app, err := spec.New(ctx, loaded.Value, log)
	if err != nil {
		return err
	}
	return app.Run(ctx)
}

// migrate applies the service's migrations to DATABASE_URL.
func migrate(ctx context.Context, schema string, getenv config.Getenv) error {
	loaded, err := config.LoadFrom[config.Common](getenv)
	if err != nil {
		return err
	}
	return db.Migrate(ctx, loaded.Value.DatabaseURL, schema)
}
