package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/board"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// Runs reads the latest reconciliation run and the open cases; *store.Store
// is one.
type Runs interface {
	LastRun(ctx context.Context) (store.LastRun, error)
	OpenCaseStats(ctx context.Context) ([]store.CaseStat, error)
}

// Board answers GET /admin/board, the reconciler's part of the console's
// pipeline board: its last run and its open cases by kind, both read
// through indexes.
type Board struct{ runs Runs }

// NewBoard returns the endpoint reading through runs.
func NewBoard(runs Runs) *Board { return &Board{runs: runs} }

// Register adds GET /admin/board to g, the guarded /admin group.
func (a *Board) Register(g *echo.Group) { g.GET("/board", a.board) }

// RunView is a run as the board shows it; finished_at is absent while it
// runs (or when its process died), error when it succeeded.
type RunView struct {
	ID             int64      `json:"id"`
	StartedAt      time.Time  `json:"started_at"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	Checked        int32      `json:"checked"`
	Missing        int32      `json:"missing"`
	Republished    int32      `json:"republished"`
	FindingsSeen   int32      `json:"findings_seen"`
	FindingsClosed int32      `json:"findings_closed"`
	Error          *string    `json:"error,omitempty"`
}

// BoardView is the answer of GET /admin/board; last_run is absent until
// the reconciler has run once.
type BoardView struct {
	LastRun *RunView          `json:"last_run,omitempty"`
	Cases   []board.CaseCount `json:"cases"`
}

func (a *Board) board(c echo.Context) error {
	ctx := c.Request().Context()
	var out BoardView
	r, err := a.runs.LastRun(ctx)
	switch {
	case err == nil:
		out.LastRun = &RunView{ID: r.ID, StartedAt: r.StartedAt.UTC(), FinishedAt: r.FinishedAt, Checked: r.Checked,
			Missing: r.Missing, Republished: r.Republished, FindingsSeen: r.FindingsSeen, FindingsClosed: r.FindingsClosed, Error: r.Error}
	case !errkind.Is(err, errkind.NotFound):
		return err
	}
	stats, err := a.runs.OpenCaseStats(ctx)
	if err != nil {
		return err
	}
	out.Cases = make([]board.CaseCount, len(stats))
	for i, s := range stats {
		out.Cases[i] = board.CaseCount{Kind: s.Kind, Open: s.Open, OldestAgeSeconds: time.Since(s.Oldest).Seconds()}
	}
	return c.JSON(http.StatusOK, out)
}
