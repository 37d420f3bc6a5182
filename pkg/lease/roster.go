package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/pg"
)

// Roster counts the live processes of a group, such as the relays that
// compete for one outbox's shards, so each can aim at its fair share of a
// set of leases. Each process calls Beat more often than ttl; a process
// that stops beating drops out of the count ttl after its last beat. The
// roster lives in the schema's lease_members table:
//
//	CREATE TABLE <schema>.lease_members (
//	    grp        text NOT NULL,
//	    holder     text NOT NULL,
//	    expires_at timestamptz NOT NULL,
//	    PRIMARY KEY (grp, holder)
//	);
type Roster struct {
	pool   *pgxpool.Pool
	table  string
	group  string
	holder string
	ttl    time.Duration
}

// forgetAfter is how long a member's row outlives its expiry before a Beat
// deletes it: holders are unique per process, so rows of dead processes
// would otherwise pile up.
const forgetAfter = time.Hour

// NewRoster returns holder's membership of group in schema's lease_members
// table, lasting ttl after each Beat.
func NewRoster(pool *pgxpool.Pool, schema, group, holder string, ttl time.Duration) *Roster {
	return &Roster{pool: pool, table: pgx.Identifier{schema, "lease_members"}.Sanitize(), group: group, holder: holder, ttl: ttl}
}

// Beat records that holder is alive for another ttl and returns how many
// members of the group are alive, holder included. It also deletes members
// long dead.
func (r *Roster) Beat(ctx context.Context) (members int, err error) {
	q := `WITH me AS (
  INSERT INTO ` + r.table + ` (grp, holder, expires_at) VALUES ($1, $2, now() + $3::interval)
  ON CONFLICT (grp, holder) DO UPDATE SET expires_at = excluded.expires_at),
gone AS (
  DELETE FROM ` + r.table + ` WHERE grp = $1 AND expires_at < now() - $4::interval)
SELECT 1 + count(*) FROM ` + r.table + ` WHERE grp = $1 AND holder <> $2 AND expires_at > now()`
	err = r.pool.QueryRow(ctx, q, r.group, r.holder, r.ttl.String(), forgetAfter.String()).Scan(&members)
	if err != nil {
		return 0, pg.Interpret(err, "roster beat %s", r.group)
	}
	return members, nil
}

// Leave removes holder from the group at once, so the others count one
// fewer member without waiting for ttl.
func (r *Roster) Leave(ctx context.Context) error {
	if _, err := r.pool.Exec(ctx, `DELETE FROM `+r.table+` WHERE grp = $1 AND holder = $2`, r.group, r.holder); err != nil {
		return fmt.Errorf("leave roster %s: %w", r.group, err)
	}
	return nil
}
