// Package pg opens PostgreSQL pools and applies a service's migrations to its
// own schema.
package pg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for goose
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"

	"github.com/onceflow/onceflow/pkg/errkind"
)

// DefaultMaxConns is a pool's size unless the DSN sets pool_max_conns.
// pgx's own default (4 on small machines) starves a service whose HTTP
// handlers and workers share the pool: commits that could be flushed
// together wait for a connection instead.
const DefaultMaxConns = 16

// Option adjusts a pool's configuration before it opens.
type Option func(*pgxpool.Config)

// WithSetting sets a PostgreSQL run-time parameter on every connection.
func WithSetting(name, value string) Option {
	return func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams[name] = value }
}

// WalkKeys, run first in a transaction, leaves the planner only index
// scans for the rest of it (sequential and bitmap scans off, as SET LOCAL
// would). It is for a statement that walks a key in order and stops after
// a batch, such as a prune, which PostgreSQL misprices once a table's rows
// no longer lie in key order (freed space is reused): it prices the walk
// as a random read a row, and reading every candidate and sorting looks
// cheaper.
const WalkKeys = `SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true)`

// Beginner starts transactions: *pgxpool.Pool, *pgx.Conn and pgx.Tx (a
// savepoint) satisfy it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// InKeyWalk runs fn in a transaction of db's that runs WalkKeys first,
// committed when fn returns nil and rolled back otherwise.
func InKeyWalk(ctx context.Context, db Beginner, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, WalkKeys); err != nil {
			return err
		}
		return fn(tx)
	})
}

// RegisterTypes teaches conn's type map our Go types that pgx would
// otherwise send and read through database/sql's interfaces: a
// github.com/google/uuid UUID goes as its 16 bytes instead of being
// formatted as text and parsed back on each side of every statement.
func RegisterTypes(_ context.Context, conn *pgx.Conn) error {
	pgxuuid.Register(conn.TypeMap())
	return nil
}

// Open connects a pool to dsn and checks that the server answers within 10 s.
func Open(ctx context.Context, dsn string, opts ...Option) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.AfterConnect = RegisterTypes
	for _, o := range opts {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping %s: %w", cfg.ConnConfig.Host, err)
	}
	return pool, nil
}

// Migrate applies every pending migration in fsys to schema, recording them
// in schema.goose_db_version. A session advisory lock makes concurrent
// migrators (a compose one-shot, a Kubernetes Job) safe.
func Migrate(ctx context.Context, dsn, schema string, fsys fs.FS) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return fmt.Errorf("migrate %s: open: %w", schema, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("migrate %s: create schema: %w", schema, err)
	}
	store, err := database.NewStore(database.DialectPostgres, schema+".goose_db_version")
	if err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}
	p, err := goose.NewProvider("", db, fsys,
		goose.WithStore(store), goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate %s: %w", schema, err)
	}
	return nil
}

// Interpret turns a driver error into an error of the errkind vocabulary,
// prefixed with what (a format and its arguments, e.g. "document %d"): no
// rows is NotFound, a unique or exclusion violation Conflict, a foreign key
// violation Invalid (the row names another that does not exist), a
// serialization failure or deadlock Unavailable (the transaction may be
// retried). Any other error keeps its kind, Internal when it has none. nil
// stays nil. Only store packages call it: the rest of the code sees kinds.
func Interpret(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errkind.Wrap(errkind.NotFound, err, what+": not found")
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505", "23P01":
			return errkind.Wrap(errkind.Conflict, err, what+": already exists")
		case "23503":
			return errkind.Wrap(errkind.Invalid, err, what+": refers to a row that does not exist")
		case "40001", "40P01":
			return errkind.Wrap(errkind.Unavailable, err, what+": concurrent update, retry")
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// IsForeignKeyViolation reports whether err is PostgreSQL's
// foreign_key_violation: a row names another that does not exist.
func IsForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}

// IsUniqueViolation reports whether err is PostgreSQL's unique_violation.
func IsUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
