package store

import (
	"context"
	"slices"

	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
)

// Republished is what Republish did with each key it was given.
type Republished struct {
	Due     []string // rows made due again: the relay publishes them once more
	Parked  []string // rows parked: left alone, an operator unparks them
	Unknown []string // keys with no outbox row (never written, or pruned)
}

// Republish makes the outbox rows of keys due again, in one transaction,
// unless they are parked: unpublished, no attempts, due now. The relay then
// publishes them once more (woken at commit), signed with its key; the
// invoicer records a document once however many times its event arrives.
// Its errors are the database's.
func (s *Store) Republish(ctx context.Context, keys []string) (Republished, error) {
	var out Republished
	err := s.InTx(ctx, func(tx *Tx) error {
		due, err := tx.q.OutboxRepublish(ctx, keys)
		if err != nil {
			return pg.Interpret(err, "republish outbox rows")
		}
		if len(due) > 0 { // wake the relay as soon as this commits, as outbox.Unpark does
			if _, err := tx.tx.Exec(ctx, `SELECT pg_notify($1, $2)`, outbox.Channel, Outbox.String()); err != nil {
				return pg.Interpret(err, "wake the relay")
			}
		}
		parked, err := tx.q.OutboxParkedKeys(ctx, keys)
		if err != nil {
			return pg.Interpret(err, "read parked outbox rows")
		}
		out = Republished{Due: due, Parked: parked, Unknown: []string{}}
		for _, k := range keys {
			if !slices.Contains(due, k) && !slices.Contains(parked, k) && !slices.Contains(out.Unknown, k) {
				out.Unknown = append(out.Unknown, k)
			}
		}
		return nil
	})
	return out, err
}
