// Package db holds every service's migrations, embedded so each binary can
// apply its own schema with its `migrate` subcommand, and so the one-shot
// migrator can apply them all.
package db

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/onceflow/onceflow/pkg/pg"
)

//go:embed */migrations/*.sql
var migrations embed.FS

// Schemas lists the service schemas in the order they are migrated.
var Schemas = []string{"ingest", "relay", "invoicer", "reconciler"}

// Migrations returns the migration files of schema.
func Migrations(schema string) (fs.FS, error) {
	sub, err := fs.Sub(migrations, schema+"/migrations")
	if err != nil {
		return nil, fmt.Errorf("migrations of %s: %w", schema, err)
	}
	if _, err := fs.Stat(sub, "."); err != nil {
		return nil, fmt.Errorf("no migrations for schema %q", schema)
	}
	return sub, nil
}

// Migrate applies schema's migrations to the database at dsn.
func Migrate(ctx context.Context, dsn, schema string) error {
	fsys, err := Migrations(schema)
	if err != nil {
		return err
	}
	return pg.Migrate(ctx, dsn, schema, fsys)
}
