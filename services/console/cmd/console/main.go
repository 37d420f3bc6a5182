// Command console is onceflow's web operations console: the pipeline
// board, the cases inbox and the trace, over the services' admin APIs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/services/console/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Args[1:], os.Stdout); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "console:", err)
		os.Exit(1)
	}
}

// run is the console's entry point: the subcommand in args (serve by default,
// healthcheck, hash-password) with the settings getenv gives and the log on stdout.
func run(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	return service.Main(ctx, app.Spec, getenv, args, stdout)
}
