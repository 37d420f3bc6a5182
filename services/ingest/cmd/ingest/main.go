// Command ingest receives payment webhooks, records them durably and applies
// them: see the README.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/services/ingest/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Args[1:], os.Stdout); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

// run is ingest's entry point: the subcommand in args (serve by default,
// migrate, healthcheck) with the settings getenv gives and the log on stdout.
func run(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	return service.Main(ctx, app.Spec, getenv, args, stdout)
}
