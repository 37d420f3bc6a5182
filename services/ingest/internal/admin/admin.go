// Package admin serves ingest's operator endpoints on the /admin group
// (which the admin token guards): the receipts' status, the parked ones,
// sending one back to the apply worker, and ingest's cases (docs/cases.md):
// listing them and closing one with an operator's action; and making
// billing events due again for the reconciler's sweep.
package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// API is the operator API.
type API struct {
	store *store.Store
	log   *zap.Logger
	wake  chan<- struct{}
}

// New returns the API; a retry sends on wake so an apply worker looks at
// once.
func New(st *store.Store, log *zap.Logger, wake chan<- struct{}) *API {
	return &API{store: st, log: log, wake: wake}
}

// Register adds the status, receipts, cases, outbox republish and console
// routes (board, trace, reveal) to g, the guarded /admin group (httpserver.Server.Admin).
func (a *API) Register(g *echo.Group) {
	g.GET("/status", a.status)
	g.GET("/receipts/parked", a.listParked)
	g.POST("/receipts/:id/retry", a.retry)
	g.GET("/cases", a.listCases)
	g.GET("/cases/:id", a.getCase)
	g.POST("/cases/:id/resolve", a.resolveCase)
	g.POST("/outbox/republish", a.republish)
	a.registerConsole(g)
}

// Status is ingest's part of the pipeline state.
type Status struct {
	Receipts map[string]int64 `json:"receipts"` // per status: pending, done, rejected, parked
	// OldestPending is when the oldest pending receipt arrived; absent when
	// none is pending.
	OldestPending *time.Time `json:"oldest_pending,omitempty"`
}

func (a *API) status(c echo.Context) error {
	ctx := c.Request().Context()
	counts, err := a.store.ReceiptCounts(ctx)
	if err != nil {
		return err
	}
	st := Status{Receipts: map[string]int64{"pending": 0, "done": 0, "rejected": 0, "parked": 0}}
	for status, n := range counts {
		st.Receipts[status] = n
	}
	backlog, err := a.store.ReceiptBacklog(ctx)
	if err != nil {
		return err
	}
	if !backlog.Oldest.IsZero() {
		t := time.Unix(backlog.Oldest.Unix(), 0).UTC()
		st.OldestPending = &t
	}
	return c.JSON(http.StatusOK, st)
}

// Parked is a parked receipt as shown to an operator: never its body.
type Parked struct {
	ID         int64     `json:"id"`
	Source     string    `json:"source"`
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	Attempts   int       `json:"attempts"`
	LastError  string    `json:"last_error"`
	ReceivedAt time.Time `json:"received_at"`
}

func (a *API) listParked(c echo.Context) error {
	after, err := queryInt(c, "after", 0)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 100)
	if err != nil || limit < 1 || limit > 1000 {
		return errkind.Coded(errkind.Invalid, "invalid_limit", "limit: want 1 to 1000")
	}
	parked, err := a.store.ParkedReceipts(c.Request().Context(), after, int(limit))
	if err != nil {
		return err
	}
	out := make([]Parked, len(parked))
	for i, r := range parked {
		out[i] = Parked{ID: r.ID, Source: r.Source, EventID: r.EventID, EventType: r.EventType,
			Attempts: r.Attempts, LastError: r.LastError, ReceivedAt: r.ReceivedAt}
	}
	return c.JSON(http.StatusOK, map[string]any{"receipts": out})
}

func (a *API) retry(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return errkind.Coded(errkind.Invalid, "invalid_id", "id: want a receipt number")
	}
	open, err := a.store.OpenCasesOfReceipt(c.Request().Context(), id)
	if err != nil {
		return err
	}
	if len(open) > 0 {
		return errkind.Coded(errkind.Conflict, "case_open",
			"receipt %d is the subject of open case %s: resolve the case (POST /admin/cases/%s/resolve) so that who and why are recorded", id, caseJSON(open[0]).ID, caseJSON(open[0]).ID)
	}
	row, err := a.store.RetryReceipt(c.Request().Context(), id)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.NotFound, "not_retryable", "no parked or rejected receipt with this id")
	}
	if err != nil {
		return err
	}
	a.log.Info("operator retried receipt", zap.Int64("receipt", row.ID), zap.String("source", row.Source), zap.String("event_id", row.EventID))
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return c.JSON(http.StatusOK, map[string]any{"id": row.ID, "status": "pending"})
}

func queryInt(c echo.Context, name string, def int64) (int64, error) {
	s := c.QueryParam(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errkind.Coded(errkind.Invalid, "invalid_"+name, "%s: want a non-negative integer", name)
	}
	return n, nil
}
