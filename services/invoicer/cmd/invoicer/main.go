// Command invoicer records the fiscal documents billing events ask for and emits
// each exactly once: see the README.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/services/invoicer/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Args[1:], os.Stdout); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "invoicer:", err)
		os.Exit(1)
	}
}

// run runs the subcommand in args (serve, migrate or healthcheck) with the
// settings getenv returns, logging to stdout.
func run(ctx context.Context, getenv func(string) string, args []string, stdout io.Writer) error {
	return service.Main(ctx, app.Spec, getenv, args, stdout)
}
