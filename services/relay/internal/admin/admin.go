// Package admin serves the relay's operator endpoints under /admin, behind
// the ADMIN_TOKEN bearer token: list and unpark parked outbox rows, and
// replay published ones. Every instance serves them, leader or not: they
// only change rows, and the leader publishes what they make due.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/outbox"
)

const (
	defaultPage   = 100
	maxPage       = 1000
	defaultReplay = 1000
	maxReplay     = 10000
	maxBodyBytes  = 4096
)

// DB is what the endpoints change rows through: a pool, which can also
// open the transaction an unpark runs in (*pgxpool.Pool is one).
type DB interface {
	outbox.Querier
	Begin(ctx context.Context) (pgx.Tx, error)
}

// API answers the operator endpoints for a fixed set of outboxes.
type API struct {
	db     DB
	tables map[string]outbox.Table
	names  []string
	log    *zap.Logger
}

// New returns the endpoints for tables, reading and changing their rows
// through db.
func New(db DB, tables []outbox.Table, log *zap.Logger) *API {
	a := &API{db: db, tables: map[string]outbox.Table{}, log: log}
	for _, t := range tables {
		a.tables[t.String()] = t
		a.names = append(a.names, t.String())
	}
	return a
}

// Register adds the endpoints to g, the guarded /admin group
// (httpserver.Server.Admin): GET /admin/outboxes, and under
// /admin/outboxes/:outbox the parked rows, unpark and replay; GET
// /admin/leaders.
func (a *API) Register(g *echo.Group) {
	g.GET("/outboxes", a.listOutboxes)
	g.GET("/leaders", a.listLeaders)
	o := g.Group("/outboxes/:outbox")
	o.GET("/parked", a.listParked)
	o.POST("/parked/:id/unpark", a.unpark)
	o.POST("/replay", a.replay)
}

// OutboxStatus is one outbox's backlog, as GET /admin/outboxes lists it.
type OutboxStatus struct {
	Outbox  string `json:"outbox"`
	Pending int64  `json:"pending"`
	Parked  int64  `json:"parked"`
	// OldestPending is the creation time of the oldest pending row; absent
	// when none is pending.
	OldestPending *time.Time `json:"oldest_pending,omitempty"`
}

func (a *API) listOutboxes(c echo.Context) error {
	out := make([]OutboxStatus, 0, len(a.names))
	for _, name := range a.names {
		st, err := outbox.ReadStats(c.Request().Context(), a.db, a.tables[name])
		if err != nil {
			return fmt.Errorf("stats of %s: %w", name, err)
		}
		o := OutboxStatus{Outbox: name, Pending: st.Pending, Parked: st.Parked}
		if !st.OldestPending.IsZero() {
			o.OldestPending = &st.OldestPending
		}
		out = append(out, o)
	}
	return c.JSON(http.StatusOK, map[string]any{"outboxes": out})
}

// listLeaders answers GET /admin/leaders: every relay lease (one per
// outbox shard), its holder, and whether it is live, so the console can
// show each outbox's leader.
func (a *API) listLeaders(c echo.Context) error {
	leases, err := lease.List(c.Request().Context(), a.db, "relay")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"leases": leases})
}

// parkedPage is the answer of GET /admin/outboxes/:outbox/parked.
type parkedPage struct {
	Outbox string             `json:"outbox"`
	Rows   []outbox.ParkedRow `json:"rows"`
	// NextAfterID is the after_id of the next page; absent on the last one.
	NextAfterID int64 `json:"next_after_id,omitempty"`
}

func (a *API) listParked(c echo.Context) error {
	t, err := a.table(c)
	if err != nil {
		return err
	}
	afterID, err := intParam(c.QueryParam("after_id"), "after_id", 0, 0, 1<<63-1)
	if err != nil {
		return err
	}
	limit, err := intParam(c.QueryParam("limit"), "limit", defaultPage, 1, maxPage)
	if err != nil {
		return err
	}
	rows, err := outbox.ListParked(c.Request().Context(), a.db, t, afterID, int(limit))
	if err != nil {
		return err
	}
	page := parkedPage{Outbox: t.String(), Rows: rows}
	if len(rows) == int(limit) {
		page.NextAfterID = rows[len(rows)-1].ID
	}
	return c.JSON(http.StatusOK, page)
}

func (a *API) unpark(c echo.Context) error {
	t, err := a.table(c)
	if err != nil {
		return err
	}
	id, err := intParam(c.Param("id"), "id", 0, 1, 1<<63-1)
	if err != nil {
		return err
	}
	req, err := decodeUnpark(c.Request().Body)
	if err != nil {
		return err
	}
	ok, err := a.unparkAs(c.Request().Context(), t, id, req)
	if err != nil {
		return err
	}
	if !ok {
		return errkind.Coded(errkind.NotFound, "not_parked", "%s has no parked row %d", t, id)
	}
	a.log.Info("unparked outbox row", zap.String("outbox", t.String()), zap.Int64("id", id), zap.String("actor", req.Actor))
	return c.JSON(http.StatusOK, map[string]any{"outbox": t.String(), "id": id, "unparked": true})
}

// unparkRequest is the optional body of POST .../parked/:id/unpark: who
// unparks the row and why, recorded on the row's parked_outbox_row case
// (docs/cases.md) when the producer's trigger closes it.
type unparkRequest struct {
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
}

// decodeUnpark reads an unpark body; an empty one is allowed (the case is
// then closed by the relay's database user, without a reason).
func decodeUnpark(body io.Reader) (unparkRequest, error) {
	var req unparkRequest
	dec := json.NewDecoder(io.LimitReader(body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
		return req, errkind.Coded(errkind.Invalid, "invalid_body", "%s",
			"want JSON {actor, reason} or no body: "+err.Error())
	}
	return req, nil
}

// unparkAs unparks row id of t in a transaction that first sets
// onceflow.actor and onceflow.reason (SET LOCAL), which the producer's
// trigger writes on the case it closes.
func (a *API) unparkAs(ctx context.Context, t outbox.Table, id int64, req unparkRequest) (ok bool, err error) {
	err = pgx.BeginFunc(ctx, a.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('onceflow.actor', $1, true), set_config('onceflow.reason', $2, true)`,
			req.Actor, req.Reason); err != nil {
			return fmt.Errorf("set actor: %w", err)
		}
		ok, err = outbox.Unpark(ctx, tx, t, id)
		return err
	})
	return ok, err
}

// replayRequest is the body of POST /admin/outboxes/:outbox/replay: an id
// range, a creation-time range, or both.
type replayRequest struct {
	FromID int64     `json:"from_id"`
	ToID   int64     `json:"to_id"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Limit  int       `json:"limit"`
}

// replayResult says what a replay reset; More means rows may remain in the
// range past LastID: repeat with from_id = last_id + 1.
type replayResult struct {
	Outbox   string `json:"outbox"`
	Replayed int    `json:"replayed"`
	LastID   int64  `json:"last_id"`
	More     bool   `json:"more"`
}

func (a *API) replay(c echo.Context) error {
	t, err := a.table(c)
	if err != nil {
		return err
	}
	req, err := decodeReplay(c.Request().Body)
	if err != nil {
		return err
	}
	r := outbox.Range{FromID: req.FromID, ToID: req.ToID, From: req.From, To: req.To}
	n, last, err := outbox.Replay(c.Request().Context(), a.db, t, r, req.Limit)
	if err != nil {
		return err
	}
	a.log.Info("replayed outbox rows", zap.String("outbox", t.String()), zap.Int64("from_id", r.FromID), zap.Int64("to_id", r.ToID),
		zap.Time("from", r.From), zap.Time("to", r.To), zap.Int("rows", n), zap.Int64("last_id", last))
	return c.JSON(http.StatusOK, replayResult{Outbox: t.String(), Replayed: n, LastID: last, More: n == req.Limit})
}

// decodeReplay reads and checks a replay body. Unknown fields are refused,
// so a misspelt bound cannot widen the range to the whole outbox.
func decodeReplay(body io.Reader) (replayRequest, error) {
	var req replayRequest
	dec := json.NewDecoder(io.LimitReader(body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, errkind.Coded(errkind.Invalid, "invalid_body", "%s",
			"want JSON {from_id, to_id} and/or {from, to} (RFC 3339), optional limit: "+err.Error())
	}
	ids := req.FromID != 0 || req.ToID != 0
	times := !req.From.IsZero() || !req.To.IsZero()
	switch {
	case !ids && !times:
		return req, invalidRange("want from_id and to_id, or from and to")
	case ids && (req.FromID < 1 || req.ToID < req.FromID):
		return req, invalidRange("want 1 <= from_id <= to_id")
	case times && (req.From.IsZero() || !req.To.After(req.From)):
		return req, invalidRange("want from before to, both RFC 3339 times")
	}
	if req.Limit == 0 {
		req.Limit = defaultReplay
	}
	if req.Limit < 1 || req.Limit > maxReplay {
		return req, errkind.Coded(errkind.Invalid, "invalid_limit", "want limit from 1 to %d", maxReplay)
	}
	return req, nil
}

func invalidRange(msg string) error {
	return errkind.Coded(errkind.Invalid, "invalid_range", "%s", msg)
}

// table resolves the :outbox path parameter to a configured outbox.
func (a *API) table(c echo.Context) (outbox.Table, error) {
	t, ok := a.tables[c.Param("outbox")]
	if !ok {
		return t, errkind.Coded(errkind.NotFound, "unknown_outbox", "want one of %s", strings.Join(a.names, ", "))
	}
	return t, nil
}

// intParam parses a decimal parameter in [lo, hi]; empty gives def.
func intParam(v, name string, def, lo, hi int64) (int64, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, errkind.Coded(errkind.Invalid, "invalid_"+name, "want %s from %d to %d", name, lo, hi)
	}
	return n, nil
}
