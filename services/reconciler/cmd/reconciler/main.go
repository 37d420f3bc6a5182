// Command reconciler is onceflow's safety net: it re-enqueues paid payments
// without an invoice and refunds without a credit note. Subcommands: serve
// (default), run-once, migrate, healthcheck; see internal/app.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/services/reconciler/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, os.Args[1:]); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		os.Exit(1)
	}
}
