// Command reconciler is onceflow's safety net: it re-enqueues paid payments
// without an invoice and refunds without a credit note. Subcommands: serve
// (default), run-once, report, migrate, healthcheck; see internal/app.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/services/reconciler/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Args[1:], os.Stdout); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		os.Exit(1)
	}
}

// run runs the subcommand args[0] (serve by default) with the settings
// getenv returns, writing the log (serve) or the output (run-once, report)
// to stdout.
func run(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	return service.Main(ctx, app.Spec, getenv, args, stdout)
}
