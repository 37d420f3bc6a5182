package store

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
)

// Position is a keyset position in a sweep: when a payment or refund
// became final, and its id. The zero Position sorts before every row; one
// with only At set, before every row final at At or later.
type Position struct {
	At time.Time
	ID string
}

// SweepState is where the missing-document sweep of one source kind
// stands: the recent pass's watermark (zero before any), the full pass's
// cursor (zero at the start of a pass) and how many full passes finished.
type SweepState struct {
	Recent, Full   Position
	FullPasses     int64
	FullFinishedAt time.Time // zero before the first finished pass
}

// SweepState returns where the sweep of sourceKind stands; the zero
// SweepState when it never ran. Its errors are the database's.
func (s *Store) SweepState(ctx context.Context, sourceKind string) (SweepState, error) {
	row, err := s.q.SweepStateGet(ctx, sourceKind)
	if err != nil {
		err = pg.Interpret(err, "sweep state %s", sourceKind)
		if errkind.Is(err, errkind.NotFound) {
			return SweepState{}, nil
		}
		return SweepState{}, err
	}
	return SweepState{
		Recent: Position{At: deref(row.RecentAt), ID: row.RecentID}, Full: Position{At: deref(row.FullAt), ID: row.FullID},
		FullPasses: row.FullPasses, FullFinishedAt: deref(row.FullFinishedAt),
	}, nil
}

// AdvanceSweepRecent moves the recent pass's watermark of sourceKind to
// p, never back. Its errors are the database's.
func (s *Store) AdvanceSweepRecent(ctx context.Context, sourceKind string, p Position) error {
	return pg.Interpret(s.q.SweepStateAdvanceRecent(ctx, sourceKind, p.At, p.ID), "advance sweep %s", sourceKind)
}

// AdvanceSweepFull moves the full pass's cursor of sourceKind to p. Its
// errors are the database's.
func (s *Store) AdvanceSweepFull(ctx context.Context, sourceKind string, p Position) error {
	return pg.Interpret(s.q.SweepStateAdvanceFull(ctx, sourceKind, p.At, p.ID), "advance full sweep %s", sourceKind)
}

// FinishSweepFull records a finished full pass of sourceKind; the next
// starts from the oldest. Its errors are the database's.
func (s *Store) FinishSweepFull(ctx context.Context, sourceKind string) error {
	return pg.Interpret(s.q.SweepStateFinishFull(ctx, sourceKind), "finish full sweep %s", sourceKind)
}

// CloseFinding closes the open finding of kind and reference, if there is
// one. Its errors are the database's.
func (s *Store) CloseFinding(ctx context.Context, kind, reference string) error {
	_, err := s.q.FindingClose(ctx, kind, reference)
	return pg.Interpret(err, "close finding %s %s", kind, reference)
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
