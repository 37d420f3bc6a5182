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
	"runtime/debug"
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
	tuneGC(getenv)
	return service.Main(ctx, app.Spec, getenv, args, stdout)
}

// gcPercent is the relay's GOGC when the environment sets none. Its live
// heap is small (the batches in flight, a few MB) while a backlog's drain
// allocates about 10 KB a message in the SDK, so Go's default of 100
// collects every few MB. At 400 the relay drained a backlog with about a
// fifth less CPU a message on the bench machine (34-48 against 45-60 us
// over fifteen rounds). GOMEMLIMIT, set from the container's limit
// (deploy/), still bounds the heap.
const gcPercent = 400

// tuneGC sets the garbage collector's target to gcPercent unless GOGC is
// set, which the runtime has read already.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
