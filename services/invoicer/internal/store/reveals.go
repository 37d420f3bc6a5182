package store

import (
	"context"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/reveals"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// RecordReveal records that r.Actor was shown subject's personal data for
// r.Reason.
func (s *Store) RecordReveal(ctx context.Context, subject string, r reveals.Request) (reveals.Reveal, error) {
	row, err := s.q.RevealInsert(ctx, subject, r.Actor, r.Reason)
	if err != nil {
		return reveals.Reveal{}, pg.Interpret(err, "record reveal of %s", subject)
	}
	return revealFromRow(row), nil
}

// Reveals lists the recorded reveals newest first: at most limit, with ids
// below before (0: from the newest).
func (s *Store) Reveals(ctx context.Context, before int64, limit int) ([]reveals.Reveal, error) {
	rows, err := s.q.RevealList(ctx, before, int32(limit))
	if err != nil {
		return nil, pg.Interpret(err, "list reveals")
	}
	out := make([]reveals.Reveal, len(rows))
	for i, r := range rows {
		out[i] = revealFromRow(r)
	}
	return out, nil
}

func revealFromRow(r dbsqlc.InvoicerReveal) reveals.Reveal {
	return reveals.Reveal{ID: r.ID, Subject: r.Subject, Actor: r.Actor, Reason: r.Reason, At: r.RevealedAt.UTC()}
}
