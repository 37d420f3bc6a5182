package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/pg"
)

// Layout is one way of splitting a job between leases: the leases named
// Names, all starting with Prefix, which every lease of the job (of any
// layout) starts with. While any lease of one layout is live, no lease of
// another layout is acquired or renewed, so two layouts never run the job
// at once: a new layout starts once the old one's leases are all released
// or expired, and the expired ones are then deleted.
type Layout struct {
	Prefix string
	Names  []string
}

// NewInLayout returns the lease called name, one of lay.Names, for holder,
// lasting ttl after each acquisition or renewal.
func NewInLayout(pool *pgxpool.Pool, schema string, lay *Layout, name, holder string, ttl time.Duration) *Lease {
	l := New(pool, schema, name, holder, ttl)
	l.layout = lay
	return l
}

// acquireInLayout is Acquire for a lease of a layout. A transaction-scoped
// advisory lock on the job serialises its acquisitions, so the check for
// another live layout and the acquisition are one step.
func (l *Lease) acquireInLayout(ctx context.Context) (token int64, ok bool, err error) {
	err = pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, l.table+" "+l.layout.Prefix); err != nil {
			return fmt.Errorf("lock layout: %w", err)
		}
		var other bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+l.table+`
WHERE starts_with(name, $1) AND name <> ALL($2) AND expires_at > now())`, l.layout.Prefix, l.layout.Names).Scan(&other); err != nil {
			return fmt.Errorf("look for another layout: %w", err)
		}
		if other {
			return nil
		}
		// Every lease of another layout has expired: retire them, so no
		// check mistakes them for a job nobody runs.
		if _, err := tx.Exec(ctx, `DELETE FROM `+l.table+` WHERE starts_with(name, $1) AND name <> ALL($2)`,
			l.layout.Prefix, l.layout.Names); err != nil {
			return fmt.Errorf("retire another layout: %w", err)
		}
		token, ok, err = l.acquire(ctx, tx)
		return err
	})
	if err != nil {
		return 0, false, pg.Interpret(err, "acquire lease %s", l.name)
	}
	return token, ok, nil
}

// Live returns the holder of each live lease of schema's leases table whose
// name starts with prefix, by lease name.
func Live(ctx context.Context, pool *pgxpool.Pool, schema, prefix string) (map[string]string, error) {
	rows, err := pool.Query(ctx, `SELECT name, holder FROM `+pgx.Identifier{schema, "leases"}.Sanitize()+`
WHERE starts_with(name, $1) AND expires_at > now()`, prefix)
	if err != nil {
		return nil, pg.Interpret(err, "live leases %s", prefix)
	}
	out := map[string]string{}
	var name, holder string
	_, err = pgx.ForEachRow(rows, []any{&name, &holder}, func() error {
		out[name] = holder
		return nil
	})
	if err != nil {
		return nil, pg.Interpret(err, "live leases %s", prefix)
	}
	return out, nil
}
