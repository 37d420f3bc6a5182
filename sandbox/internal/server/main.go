package server

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/logging"
)

// Run is a sandbox binary's whole life: run with the command line and the
// environment, with a logger at LOG_LEVEL (default info) named name.
type Run func(ctx context.Context, log *zap.Logger, args []string, getenv func(string) string) error

// Main runs run until SIGINT or SIGTERM and exits 1 when it fails.
func Main(name string, run Run) {
	log, err := logging.New(name, Env(os.Getenv, "LOG_LEVEL", "info"))
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, log, os.Args[1:], os.Getenv)
	stop()
	if err != nil {
		log.Error(name+" failed", zap.Error(err))
	}
	_ = log.Sync()
	if err != nil {
		os.Exit(1)
	}
}
