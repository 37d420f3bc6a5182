package db

import (
	"context"
	_ "embed"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// rolesSQL creates the service roles and grants; see the file's header.
//
//go:embed roles/roles.sql
var rolesSQL string

// Role returns the PostgreSQL login role of the service that owns schema,
// e.g. onceflow_ingest: the user in that service's DATABASE_URL.
func Role(schema string) string { return "onceflow_" + schema }

// ApplyRoles creates one login role per schema in Schemas and grants each
// exactly what its service needs (db/roles/roles.sql), converging on every
// run. Run it as the migrator, the role that ran Migrate for every schema,
// after those migrations: the grants name their tables, and default
// privileges cover the tables the migrator creates later. passwords maps a
// schema to its role's password (or SCRAM verifier); a role left out keeps
// its password, and a new one gets none. An unknown schema in passwords is
// an error, and nothing is changed when any statement fails.
func ApplyRoles(ctx context.Context, dsn string, passwords map[string]string) error {
	for schema := range passwords {
		if !slices.Contains(Schemas, schema) {
			return fmt.Errorf("apply roles: password for unknown schema %q", schema)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("apply roles: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for schema, pw := range passwords {
			if _, err := tx.Exec(ctx, "SELECT set_config($1, $2, true)", "onceflow."+schema+"_password", pw); err != nil {
				return fmt.Errorf("apply roles: password of %s: %w", Role(schema), err)
			}
		}
		if _, err := tx.Exec(ctx, rolesSQL); err != nil {
			return fmt.Errorf("apply roles: %w", err)
		}
		return nil
	})
}
