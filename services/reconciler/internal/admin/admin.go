// Package admin serves the reconciler's operator endpoints under /admin,
// behind the ADMIN_TOKEN bearer token: POST /admin/runs runs one
// reconciliation now and answers its summary; GET /admin/findings lists the
// open findings (?kind=, ?limit=).
package admin

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// Reconciler runs one reconciliation; *reconcile.Reconciler is one.
type Reconciler interface {
	Once(ctx context.Context) (reconcile.Summary, error)
}

// Findings reads the open findings; *store.Store is one.
type Findings interface {
	OpenFindings(ctx context.Context, kind string, limit int) ([]store.OpenFinding, error)
}

// API answers the operator endpoints.
type API struct {
	runs     Reconciler
	findings Findings
	log      *zap.Logger
}

// New returns the endpoints running reconciliations with runs and reading
// findings through findings.
func New(runs Reconciler, findings Findings, log *zap.Logger) *API {
	return &API{runs: runs, findings: findings, log: log}
}

// Register adds the endpoints to g, the guarded /admin group
// (httpserver.Server.Admin).
func (a *API) Register(g *echo.Group) {
	g.POST("/runs", a.triggerRun)
	g.GET("/findings", a.listFindings)
}

func (a *API) triggerRun(c echo.Context) error {
	a.log.Info("operator triggered a reconciliation")
	sum, err := a.runs.Once(c.Request().Context())
	if err != nil {
		// A failed run is internal, yet its answer names it: errkind would
		// answer "internal", so this stays an HTTP error.
		return httpserver.NewHTTPError(http.StatusInternalServerError, "run_failed", "the run failed; its runs row and the log say why")
	}
	return c.JSON(http.StatusOK, map[string]any{
		"run_id": sum.RunID, "checked": sum.Sweep.Checked, "missing": sum.Sweep.Missing,
		"republished": sum.Sweep.Republished, "missing_events": sum.Sweep.MissingEvents,
		"findings": sum.Findings, "closed": sum.Closed, "summary": sum.String(),
	})
}

func (a *API) listFindings(c echo.Context) error {
	limit := 100
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return errkind.Coded(errkind.Invalid, "invalid_limit", "limit: want 1 to 1000")
		}
		limit = n
	}
	rows, err := a.findings.OpenFindings(c.Request().Context(), c.QueryParam("kind"), limit)
	if err != nil {
		a.log.Error("list findings", zap.Error(err))
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"findings": OpenFindings(rows)})
}

// OpenFinding is an open finding as operators see it, here and in the
// reconciler's report.
type OpenFinding struct {
	ID         int64  `json:"id"`
	Kind       string `json:"kind"`
	Reference  string `json:"reference"`
	Detail     string `json:"detail"`
	OpenedAt   string `json:"opened_at"`
	LastSeenAt string `json:"last_seen_at"`
	SeenCount  int    `json:"seen_count"`
}

// OpenFindings renders the store's open findings for operators, times in
// UTC to the second.
func OpenFindings(rows []store.OpenFinding) []OpenFinding {
	out := make([]OpenFinding, len(rows))
	for i, r := range rows {
		out[i] = OpenFinding{ID: r.ID, Kind: r.Kind, Reference: r.Reference, Detail: r.Detail,
			OpenedAt: r.OpenedAt.UTC().Format("2006-01-02T15:04:05Z"), LastSeenAt: r.LastSeenAt.UTC().Format("2006-01-02T15:04:05Z"), SeenCount: r.SeenCount}
	}
	return out
}
