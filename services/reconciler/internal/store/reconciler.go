package store

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"
)

// Store reads and writes the reconciler's own schema: its runs and
// findings.
type Store struct{ q *dbsqlc.Queries }

// New returns the store of the reconciler schema through db.
func New(db DB) *Store { return &Store{q: dbsqlc.New(db)} }

// Finding is something a check saw that a person should look at: one open
// finding per Kind and Reference however many runs see it.
type Finding struct {
	Kind, Reference, Detail string
}

// OpenFinding is a finding not closed yet, with when runs saw it.
type OpenFinding struct {
	Finding
	ID                   int64
	OpenedAt, LastSeenAt time.Time
	SeenCount            int // how many runs saw it
}

// KindCount is how many findings of Kind are open.
type KindCount struct {
	Kind string
	Open int64
}

// Run is a reconciliation run as opened: its id and when it started.
type Run struct {
	ID        int64
	StartedAt time.Time
}

// RunResult is what a run did, recorded when it finishes.
type RunResult struct {
	Checked, Missing, MissingEvents, Republished int
	FindingsSeen, FindingsClosed                 int
	Err                                          error // why the run failed; nil when it did not
}

// StartRun opens a run of part (all, sweep or audit); it stays unfinished
// until FinishRun, or forever when the process dies mid-run. Its errors are
// the database's.
func (s *Store) StartRun(ctx context.Context, part string) (Run, error) {
	row, err := s.q.RunStart(ctx, part)
	if err != nil {
		return Run{}, pg.Interpret(err, "start run")
	}
	return Run{ID: row.ID, StartedAt: row.StartedAt}, nil
}

// FinishRun closes run id with res, and res.Err's text when it failed. Its
// errors are the database's.
func (s *Store) FinishRun(ctx context.Context, id int64, res RunResult) error {
	var msg *string
	if res.Err != nil {
		text := res.Err.Error()
		msg = &text
	}
	err := s.q.RunFinish(ctx, dbsqlc.RunFinishParams{
		ID:             id,
		Checked:        int32(res.Checked),
		Missing:        int32(res.Missing),
		MissingEvents:  int32(res.MissingEvents),
		Republished:    int32(res.Republished),
		FindingsSeen:   int32(res.FindingsSeen),
		FindingsClosed: int32(res.FindingsClosed),
		Error:          msg,
	})
	return pg.Interpret(err, "finish run %d", id)
}

// SeeFinding opens f, or refreshes the open finding of its kind and
// reference (its detail, when it was last seen, how often). Its errors are
// the database's.
func (s *Store) SeeFinding(ctx context.Context, f Finding) error {
	err := s.q.FindingSeen(ctx, f.Kind, f.Reference, f.Detail)
	return pg.Interpret(err, "record finding %s %s", f.Kind, f.Reference)
}

// CloseUnseenFindings closes the open findings of kinds that the run started
// at runStarted did not see, and returns how many it closed. Its errors are
// the database's.
func (s *Store) CloseUnseenFindings(ctx context.Context, kinds []string, runStarted time.Time) (int64, error) {
	closed, err := s.q.FindingsCloseUnseen(ctx, kinds, runStarted)
	if err != nil {
		return 0, pg.Interpret(err, "close findings")
	}
	return closed, nil
}

// OpenFindings returns at most limit open findings, of kind or (kind "")
// all, oldest first. Its errors are the database's.
func (s *Store) OpenFindings(ctx context.Context, kind string, limit int) ([]OpenFinding, error) {
	rows, err := s.q.FindingsOpen(ctx, kind, int32(limit))
	if err != nil {
		return nil, pg.Interpret(err, "list findings")
	}
	out := make([]OpenFinding, len(rows))
	for i, r := range rows {
		out[i] = OpenFinding{Finding: Finding{Kind: r.Kind, Reference: r.Reference, Detail: r.Detail},
			ID: r.ID, OpenedAt: r.OpenedAt, LastSeenAt: r.LastSeenAt, SeenCount: int(r.SeenCount)}
	}
	return out, nil
}

// OpenFindingsByKind counts the open findings of each kind that has any.
// Its errors are the database's.
func (s *Store) OpenFindingsByKind(ctx context.Context) ([]KindCount, error) {
	rows, err := s.q.FindingsOpenByKind(ctx)
	if err != nil {
		return nil, pg.Interpret(err, "count open findings")
	}
	out := make([]KindCount, len(rows))
	for i, r := range rows {
		out[i] = KindCount(r)
	}
	return out, nil
}

// LastRun is the latest reconciliation run that swept, as the console
// shows it.
type LastRun dbsqlc.RunLastRow

// LastRun returns the latest run that swept (of part all or sweep), or an
// error of kind NotFound when none has run yet.
func (s *Store) LastRun(ctx context.Context) (LastRun, error) {
	row, err := s.q.RunLast(ctx)
	if err != nil {
		return LastRun{}, pg.Interpret(err, "last run")
	}
	return LastRun(row), nil
}

// PruneRuns deletes, of the batch oldest runs, those started before
// before, and returns how many it deleted. Its errors are the database's.
func (s *Store) PruneRuns(ctx context.Context, before time.Time, batch int) (int64, error) {
	n, err := s.q.RunsPrune(ctx, int32(batch), before)
	return n, pg.Interpret(err, "prune runs")
}
