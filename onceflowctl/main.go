// Command onceflowctl operates onceflow through the services' operator
// endpoints: pipeline status, parked receipts and outbox rows, replays,
// findings and audits. See `onceflowctl --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/onceflowctl/internal/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := ctl.NewRoot(os.Stdout, os.Getenv).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "onceflowctl:", err)
	}
	os.Exit(ctl.ExitCode(err))
}
