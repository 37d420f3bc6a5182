// Command migrate applies every onceflow schema's migrations to DATABASE_URL:
// the one-shot migrator of the local stack (each service binary can also
// migrate its own schema with its `migrate` subcommand).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/onceflow/onceflow/db"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "migrate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dsn := os.Getenv("DATABASE_URL")
	if dsn == "" {
		return fmt.Errorf("DATABASE_URL: want a postgres:// URL")
	}
	for _, schema := range db.Schemas {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			return err
		}
		fmt.Println("migrated", schema)
	}
	return nil
}
