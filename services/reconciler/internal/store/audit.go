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
// how many disagreements the audit last saw on it, and when it was last
// listed onward (zero when never).
type AuditDay struct {
	Day           time.Time // UTC midnight of the calendar day
	ListedAt      time.Time
	Listed        int
	Disagreements int
	OnwardAt      time.Time
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
		d := AuditDay{Day: r.Day, ListedAt: r.ListedAt, Listed: int(r.Listed), Disagreements: int(r.Disagreements)}
		if r.OnwardAt != nil {
			d.OnwardAt = *r.OnwardAt
		}
		out[r.Day] = d
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

// AuditDayListedOnward records that day was listed onward at at. Its
// errors are the database's.
func (s *Store) AuditDayListedOnward(ctx context.Context, provider string, day, at time.Time) error {
	return pg.Interpret(s.q.AuditDayListedOnward(ctx, &at, provider, day), "record audit day")
}

// AuditDayNumbers returns, by CFE type, the highest number a listing of
// day saw. Its errors are the database's.
func (s *Store) AuditDayNumbers(ctx context.Context, provider string, day time.Time) (map[int]int64, error) {
	rows, err := s.q.AuditDayNumbersGet(ctx, provider, day)
	if err != nil {
		return nil, pg.Interpret(err, "audit day numbers")
	}
	out := make(map[int]int64, len(rows))
	for _, r := range rows {
		out[int(r.CfeType)] = r.ListedThrough
	}
	return out, nil
}

// AdvanceAuditDayNumbers raises the highest number seen on day of each type
// in highest to that number, never lowering one. Its errors are the
// database's.
func (s *Store) AdvanceAuditDayNumbers(ctx context.Context, provider string, day time.Time, highest map[int]int64) error {
	if len(highest) == 0 {
		return nil
	}
	p := dbsqlc.AuditDayNumbersAdvanceParams{Provider: provider, Day: day}
	for typ, n := range highest {
		p.CfeTypes = append(p.CfeTypes, int32(typ))
		p.ListedThrough = append(p.ListedThrough, n)
	}
	return pg.Interpret(s.q.AuditDayNumbersAdvance(ctx, p), "record audit day numbers")
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
