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

// Deliveries is the operator API of merchant notifications
// (docs/notifications.md): listing deliveries, one with its attempt log,
// and replaying one.
type Deliveries struct {
	store *store.Store
	log   *zap.Logger
	wake  chan<- struct{}
}

// NewDeliveries returns the API; a replay sends on wake so the deliverer
// looks at once.
func NewDeliveries(st *store.Store, log *zap.Logger, wake chan<- struct{}) *Deliveries {
	return &Deliveries{store: st, log: log, wake: wake}
}

// Register adds the notification routes to g, the guarded /admin group.
func (a *Deliveries) Register(g *echo.Group) {
	g.GET("/notifications", a.list)
	g.GET("/notifications/:id", a.get)
	g.POST("/notifications/:id/replay", a.replay)
}

// Delivery is a merchant notification as shown to an operator.
type Delivery struct {
	ID            int64      `json:"id"`
	EventID       string     `json:"event_id"`
	EventType     string     `json:"event_type"`
	Status        string     `json:"status"`
	Attempts      int32      `json:"attempts"`
	NextAttemptAt time.Time  `json:"next_attempt_at"`
	LastError     *string    `json:"last_error,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	DeliveredAt   *time.Time `json:"delivered_at,omitempty"`
	ParkedAt      *time.Time `json:"parked_at,omitempty"`
	ReplayedBy    *string    `json:"replayed_by,omitempty"`
	ReplayReason  *string    `json:"replay_reason,omitempty"`
}

// Attempt is one POST of a delivery: the merchant's status (0 when none
// came back), the error, and how long it took.
type Attempt struct {
	HTTPStatus  int32     `json:"http_status"`
	Error       string    `json:"error,omitempty"`
	LatencyMS   int32     `json:"latency_ms"`
	AttemptedAt time.Time `json:"attempted_at"`
}

func deliveryView(d store.Delivery) Delivery {
	return Delivery{ID: d.ID, EventID: d.EventID, EventType: d.EventType, Status: d.Status, Attempts: d.Attempts,
		NextAttemptAt: d.NextAttemptAt, LastError: d.LastError, CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt, ParkedAt: d.ParkedAt,
		ReplayedBy: d.ReplayedBy, ReplayReason: d.ReplayReason}
}

// list serves GET /admin/notifications?status=&before=&limit=, newest first.
func (a *Deliveries) list(c echo.Context) error {
	status := c.QueryParam("status")
	switch status {
	case "", store.DeliveryPending, store.DeliveryDelivered, store.DeliveryParked:
	default:
		return errkind.Coded(errkind.Invalid, "invalid_status", "status: want pending, delivered or parked")
	}
	before, err := queryInt(c, "before", 0)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 100)
	if err != nil || limit < 1 || limit > 1000 {
		return errkind.Coded(errkind.Invalid, "invalid_limit", "limit: want 1 to 1000")
	}
	rows, err := a.store.Deliveries(c.Request().Context(), status, before, int(limit))
	if err != nil {
		return err
	}
	out := make([]Delivery, len(rows))
	for i, d := range rows {
		out[i] = deliveryView(d)
	}
	return c.JSON(http.StatusOK, map[string]any{"notifications": out})
}

// get serves GET /admin/notifications/{id}: the delivery and its attempt log.
func (a *Deliveries) get(c echo.Context) error {
	id, err := deliveryID(c)
	if err != nil {
		return err
	}
	d, attempts, err := a.store.Delivery(c.Request().Context(), id)
	if err != nil {
		return err
	}
	log := make([]Attempt, len(attempts))
	for i, at := range attempts {
		log[i] = Attempt{HTTPStatus: at.HTTPStatus, Error: at.Error, LatencyMS: at.LatencyMS, AttemptedAt: at.AttemptedAt}
	}
	return c.JSON(http.StatusOK, map[string]any{"notification": deliveryView(d), "attempts": log})
}

// Replay is an operator's request to send a notification again.
type Replay struct {
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
}

// replay serves POST /admin/notifications/{id}/replay: a parked or
// delivered notification is sent again now, under its same event id, with
// its attempts counted afresh.
func (a *Deliveries) replay(c echo.Context) error {
	id, err := deliveryID(c)
	if err != nil {
		return err
	}
	var r Replay
	if err := c.Bind(&r); err != nil {
		return errkind.Coded(errkind.Invalid, "invalid_body", "body: want JSON {\"actor\": ..., \"reason\": ...}")
	}
	if r.Actor == "" || r.Reason == "" {
		return errkind.Coded(errkind.Invalid, "missing_actor", "actor and reason: want who replays it and why")
	}
	ok, err := a.store.ReplayDelivery(c.Request().Context(), id, r.Actor, r.Reason)
	if err != nil {
		return err
	}
	if !ok {
		return errkind.Coded(errkind.NotFound, "not_replayable", "no parked or delivered notification with this id")
	}
	a.log.Info("operator replayed notification", zap.Int64("delivery", id), zap.String("actor", r.Actor))
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return c.JSON(http.StatusOK, map[string]any{"id": id, "status": store.DeliveryPending})
}

func deliveryID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, errkind.Coded(errkind.Invalid, "invalid_id", "id: want a notification number")
	}
	return id, nil
}
