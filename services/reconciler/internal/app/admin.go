package app

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// registerAdmin adds the operator endpoints, behind ADMIN_TOKEN:
// POST /admin/runs runs one reconciliation now and answers its summary;
// GET /admin/findings lists open findings (?kind=, ?limit=).
func (d *deps) registerAdmin(e *echo.Echo) {
	g := e.Group("/admin", httpserver.BearerAuth(d.cfg.AdminToken, "ADMIN_TOKEN"))
	g.POST("/runs", d.triggerRun)
	g.GET("/findings", d.listFindings)
}

func (d *deps) triggerRun(c echo.Context) error {
	d.log.Info("operator triggered a reconciliation")
	sum, err := d.reconciler.Once(c.Request().Context())
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

func (d *deps) listFindings(c echo.Context) error {
	limit := 100
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return errkind.Coded(errkind.Invalid, "invalid_limit", "limit: want 1 to 1000")
		}
		limit = n
	}
	rows, err := store.New(d.own).OpenFindings(c.Request().Context(), c.QueryParam("kind"), limit)
	if err != nil {
		d.log.Error("list findings", zap.Error(err))
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"findings": findingsOut(rows)})
}

// OpenFinding is an open finding as operators see it.
type OpenFinding struct {
	ID         int64  `json:"id"`
	Kind       string `json:"kind"`
	Reference  string `json:"reference"`
	Detail     string `json:"detail"`
	OpenedAt   string `json:"opened_at"`
	LastSeenAt string `json:"last_seen_at"`
	SeenCount  int    `json:"seen_count"`
}

func findingsOut(rows []store.OpenFinding) []OpenFinding {
	out := make([]OpenFinding, len(rows))
	for i, r := range rows {
		out[i] = OpenFinding{ID: r.ID, Kind: r.Kind, Reference: r.Reference, Detail: r.Detail,
			OpenedAt: r.OpenedAt.UTC().Format("2006-01-02T15:04:05Z"), LastSeenAt: r.LastSeenAt.UTC().Format("2006-01-02T15:04:05Z"), SeenCount: r.SeenCount}
	}
	return out
}
