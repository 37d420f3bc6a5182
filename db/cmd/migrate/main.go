// Command migrate applies every onceflow schema's migrations to DATABASE_URL:
// the one-shot migrator of the local stack and of the Kubernetes migration
// Job (each service binary can also migrate its own schema with its
// `migrate` subcommand).
//
// With -roles it then creates or updates the services' least-privilege roles
// (db/roles/roles.sql): onceflow_ingest, onceflow_relay, onceflow_invoicer
// and onceflow_reconciler. INGEST_DB_PASSWORD, RELAY_DB_PASSWORD,
// INVOICER_DB_PASSWORD and RECONCILER_DB_PASSWORD set their passwords (or
// SCRAM verifiers); an unset one keeps the role's password, and a new role
// gets none, for trust or IAM authentication. DATABASE_URL is the migrator,
// which owns the schemas.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/onceflow/onceflow/db"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "migrate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	flags := flag.NewFlagSet("migrate", flag.ContinueOnError)
	roles := flags.Bool("roles", false, "after migrating, create or update the services' roles and grants")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: want none, or -roles", flags.Args())
	}
	dsn := getenv("DATABASE_URL")
	if dsn == "" {
		return fmt.Errorf("DATABASE_URL: want a postgres:// URL")
	}
	for _, schema := range db.Schemas {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "migrated", schema)
	}
	if !*roles {
		return nil
	}
	if err := db.ApplyRoles(ctx, dsn, passwords(getenv)); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "applied roles")
	return nil
}

// passwords reads <SCHEMA>_DB_PASSWORD for each schema that has one set.
func passwords(getenv func(string) string) map[string]string {
	out := map[string]string{}
	for _, schema := range db.Schemas {
		if pw := getenv(strings.ToUpper(schema) + "_DB_PASSWORD"); pw != "" {
			out[schema] = pw
		}
	}
	return out
}
