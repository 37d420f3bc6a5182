package store

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"
)

// RelayReader reads the relay schema; the reconciler opens its connection
// read-only.
type RelayReader struct{ q *dbsqlc.Queries }

// NewRelayReader returns a reader of the relay schema through db.
func NewRelayReader(db DB) *RelayReader { return &RelayReader{q: dbsqlc.New(db)} }

// Lease is a relay leader lease: which outbox it elects a publisher of,
// who held it last and until when.
type Lease struct {
	Name, Holder string
	ExpiresAt    time.Time
}

// ExpiredLeases returns the leases that expired before expiredBefore, by
// name. Its errors are the database's.
func (r *RelayReader) ExpiredLeases(ctx context.Context, expiredBefore time.Time) ([]Lease, error) {
	rows, err := r.q.RelayLeasesExpired(ctx, expiredBefore)
	if err != nil {
		return nil, pg.Interpret(err, "relay leases")
	}
	out := make([]Lease, len(rows))
	for i, row := range rows {
		out[i] = Lease{Name: row.Name, Holder: row.Holder, ExpiresAt: row.ExpiresAt}
	}
	return out, nil
}
