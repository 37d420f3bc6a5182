package admin

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/reveals"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// CaseReader reads one service's cases; the ingest and invoicer readers
// and the reconciler's Store are each one.
type CaseReader interface {
	Cases(ctx context.Context, f store.CaseFilter) ([]store.Case, error)
	Case(ctx context.Context, id int64) (store.Case, error)
}

// CaseCloser closes the reconciler's own cases and records the reveals of
// their evidence; *store.Store is one.
type CaseCloser interface {
	CaseReader
	reveals.Lister
	CloseCase(ctx context.Context, id int64, by, action, reason string) (store.Case, error)
	RecordReveal(ctx context.Context, subject string, r reveals.Request) (reveals.Reveal, error)
}

// Cases answers the one place that lists every case (docs/cases.md):
// GET /admin/cases and /admin/cases/:id union ingest's, the invoicer's and
// the reconciler's; POST /admin/cases/:id/resolve closes the reconciler's,
// POST /admin/cases/:id/reveal answers one of them after recording who
// asked and why, and GET /admin/reveals lists those records.
type Cases struct {
	own     CaseCloser
	readers map[string]CaseReader // by service, own included
	log     *zap.Logger
}

// NewCases returns the cases endpoints over own, ingest and invoicer.
func NewCases(own CaseCloser, ingest, invoicer CaseReader, log *zap.Logger) *Cases {
	return &Cases{own: own, log: log,
		readers: map[string]CaseReader{"ingest": ingest, "invoicer": invoicer, "reconciler": own}}
}

// Register adds the endpoints to g, the guarded /admin group.
func (a *Cases) Register(g *echo.Group) {
	g.GET("/cases", a.list)
	g.GET("/cases/:id", a.get)
	g.POST("/cases/:id/resolve", a.resolve)
	g.POST("/cases/:id/reveal", a.reveal)
	reveals.Register(g, "reconciler", a.own)
}

func (a *Cases) list(c echo.Context) error {
	f, service, err := listFilter(c)
	if err != nil {
		return err
	}
	var all []store.Case
	for _, svc := range cases.Owners {
		if service != "" && service != svc {
			continue
		}
		got, err := a.readers[svc].Cases(c.Request().Context(), f)
		if err != nil {
			a.log.Error("list cases", zap.String("service", svc), zap.Error(err))
			return err
		}
		all = append(all, got...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].OpenedAt.Before(all[j].OpenedAt) })
	if len(all) > f.Limit {
		all = all[:f.Limit]
	}
	out := make([]cases.View, len(all))
	for i, k := range all {
		out[i] = caseJSON(k)
	}
	return c.JSON(http.StatusOK, map[string]any{"cases": out})
}

func listFilter(c echo.Context) (store.CaseFilter, string, error) {
	f := store.CaseFilter{Status: "open", Kind: c.QueryParam("kind"), Limit: 100}
	switch s := c.QueryParam("status"); s {
	case "":
	case "open", "closed", "all":
		f.Status = s
	default:
		return f, "", errkind.Coded(errkind.Invalid, "invalid_status", "status: want open, closed or all, got %q", s)
	}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return f, "", errkind.Coded(errkind.Invalid, "invalid_limit", "limit: want 1 to 1000")
		}
		f.Limit = n
	}
	service := c.QueryParam("service")
	if service != "" && service != "relay" && !slices.Contains(cases.Owners, service) {
		return f, "", errkind.Coded(errkind.Invalid, "invalid_service", "service: want ingest, invoicer, reconciler or relay, got %q", service)
	}
	if service == "relay" { // the relay's cases live in its producers' schemas
		service, f.Kind = "", cases.ParkedOutboxRow
	}
	return f, service, nil
}

// ParseID splits a case id "<service>-<n>" into its service and number.
func ParseID(id string) (string, int64, error) {
	svc, n, ok := cases.ParseID(id)
	if !ok {
		return "", 0, errkind.Coded(errkind.Invalid, "invalid_case_id", "case id: want <service>-<number> (ingest, invoicer or reconciler), got %q", id)
	}
	return svc, n, nil
}

func (a *Cases) get(c echo.Context) error {
	svc, n, err := ParseID(c.Param("id"))
	if err != nil {
		return err
	}
	k, err := a.readers[svc].Case(c.Request().Context(), n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, caseJSON(k))
}

// reveal answers one of the reconciler's cases with its evidence
// unmasked, after recording the reveal in reconciler.reveals; another
// service's case is revealed (and recorded) by that service.
func (a *Cases) reveal(c echo.Context) error {
	svc, n, err := ParseID(c.Param("id"))
	if err != nil {
		return err
	}
	req, err := reveals.Bind(c)
	if err != nil {
		return err
	}
	if svc != "reconciler" {
		return errkind.Coded(errkind.Refused, "wrong_service",
			"case %s belongs to %s: reveal it with %s's POST /admin/cases/%d/reveal", c.Param("id"), svc, svc, n)
	}
	ctx := c.Request().Context()
	k, err := a.own.Case(ctx, n)
	if err != nil {
		return err
	}
	rec, err := a.own.RecordReveal(ctx, reveals.Case(cases.ID("reconciler", n)), req)
	if err != nil {
		return err
	}
	a.log.Info("case evidence revealed", zap.String("case", c.Param("id")), zap.Int64("reveal", rec.ID))
	return c.JSON(http.StatusOK, caseJSON(k))
}

// resolveRequest is the body of POST /admin/cases/:id/resolve.
type resolveRequest struct {
	Action      string `json:"action"`
	Actor       string `json:"actor"`
	Reason      string `json:"reason"`
	PSPRefundID string `json:"psp_refund_id"`
}

func (a *Cases) resolve(c echo.Context) error {
	svc, n, err := ParseID(c.Param("id"))
	if err != nil {
		return err
	}
	var req resolveRequest
	if err := c.Bind(&req); err != nil {
		return errkind.Coded(errkind.Invalid, "invalid_body", "body: want JSON with action, actor and reason")
	}
	if strings.TrimSpace(req.Actor) == "" || strings.TrimSpace(req.Reason) == "" {
		return errkind.Coded(errkind.Invalid, "missing_field", "actor and reason are required")
	}
	if svc != "reconciler" {
		return errkind.Coded(errkind.Refused, "wrong_service",
			"case %s belongs to %s: resolve it with %s's POST /admin/cases/%d/resolve (onceflowctl cases resolve does)", c.Param("id"), svc, svc, n)
	}
	ctx := c.Request().Context()
	k, err := a.own.Case(ctx, n)
	if err != nil {
		return err
	}
	if k.ClosedAt != nil {
		return errkind.Coded(errkind.Conflict, "case_closed", "case %s is closed already (%s by %s)", c.Param("id"), k.Action, k.ClosedBy)
	}
	if !cases.Closes(k.Kind, req.Action) {
		return errkind.Coded(errkind.Refused, "wrong_action", "action %q does not close a %s case; want one of %s",
			req.Action, k.Kind, strings.Join(cases.Actions(k.Kind), ", "))
	}
	k, err = a.own.CloseCase(ctx, n, req.Actor, req.Action, req.Reason)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.Conflict, "case_closed", "case %s was closed meanwhile", c.Param("id"))
	}
	if err != nil {
		return err
	}
	a.log.Info("case resolved", zap.String("case", c.Param("id")), zap.String("kind", k.Kind), zap.String("action", req.Action))
	return c.JSON(http.StatusOK, caseJSON(k))
}
