package store

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"
)

// AuditDay is what the provider audit knows of one calendar day: when it
// was last listed in full, how many documents the provider returned then,
// and how many disagreements the audit last saw on it.
type AuditDay struct {
	Day           time.Time // UTC midnight of the calendar day
	ListedAt      time.Time
	Listed        int
	Disagreements int
}

// AuditDays returns what the audit of provider knows of the days from..to
// (UTC midnights), by day; a day never listed is absent. Its errors are the
// database's.
func (s *Store) AuditDays(ctx context.Context, provider string, from, to time.Time) (map[time.Time]AuditDay, error) {
	rows, err := s.q.AuditDaysGet(ctx, provider, from, to)
	if err != nil {
		return nil, pg.Interpret(err, "audit days")
	}
	out := make(map[time.Time]AuditDay, len(rows))
	for _, r := range rows {
		out[r.Day] = AuditDay{Day: r.Day, ListedAt: r.ListedAt, Listed: int(r.Listed), Disagreements: int(r.Disagreements)}
	}
	return out, nil
}

// AuditDayListed records that d.Day was listed in full. Its errors are the
// database's.
func (s *Store) AuditDayListed(ctx context.Context, provider string, d AuditDay) error {
	err := s.q.AuditDayListed(ctx, dbsqlc.AuditDayListedParams{
		Provider: provider, Day: d.Day, ListedAt: d.ListedAt, Listed: int32(d.Listed), Disagreements: int32(d.Disagreements),
	})
	return pg.Interpret(err, "record audit day")
}

// AuditDayDisagreements records the disagreements a run saw on day
// without listing it. Its errors are the database's.
func (s *Store) AuditDayDisagreements(ctx context.Context, provider string, day time.Time, n int) error {
	return pg.Interpret(s.q.AuditDayDisagreements(ctx, int32(n), provider, day), "record audit day")
}

// AuditChangedUntil returns up to when the audit of provider looked up
// our changed documents; zero when it never did. Its errors are the
// database's.
func (s *Store) AuditChangedUntil(ctx context.Context, provider string) (time.Time, error) {
	t, err := s.q.AuditStateGet(ctx, provider)
	if err != nil {
		err = pg.Interpret(err, "audit state")
		if errkind.Is(err, errkind.NotFound) {
			return time.Time{}, nil
		}
		return time.Time{}, err
	}
	return t, nil
}

// AdvanceAuditChangedUntil moves provider's changed-until mark to t, never
// back. Its errors are the database's.
func (s *Store) AdvanceAuditChangedUntil(ctx context.Context, provider string, t time.Time) error {
	return pg.Interpret(s.q.AuditStateAdvance(ctx, provider, t), "advance audit state")
}
