// Package store is the reconciler's access to PostgreSQL: one read-only
// reader per schema it inspects (IngestReader, InvoicerReader, RelayReader,
// distinct types so that one cannot be passed for another) and Store, which
// writes the reconciler's own schema (runs, findings). Every method calls
// one generated query in dbsqlc, interprets the driver's error once with
// pg.Interpret (no rows is errkind.NotFound, and so on), and returns the
// plain types declared here, never sqlc rows.
package store

import "github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"

// DB is what the readers and Store run their queries on: a pool, a
// connection or a transaction.
type DB = dbsqlc.DBTX
