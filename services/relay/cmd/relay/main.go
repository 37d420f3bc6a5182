// Command relay publishes the outbox rows of every producing service to
// their SQS queues, one leader per outbox. See internal/app for the
// configuration.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/services/relay/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Args[1:], os.Stdout); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}

// run runs the subcommand args[0] (serve by default) with the settings
// getenv returns, logging to stdout.
func run(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	return service.Main(ctx, app.Spec, getenv, args, stdout)
}
