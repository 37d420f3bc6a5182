// Package reveals is the record every service that holds personal data
// keeps of who was shown it (docs/console.md): each reveal names the
// subject (a customer or a case, never the data), the operator, the
// reason they gave and when. The request that reveals writes the record
// before it answers the data, so no data leaves without one; GET
// /admin/reveals lists them, newest first.
package reveals

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/errkind"
)

// MaxReason bounds the reason an operator gives, in bytes.
const MaxReason = 500

// Reveal is one recorded reveal of personal data.
type Reveal struct {
	ID      int64     `json:"id"`
	Service string    `json:"service"`
	Subject string    `json:"subject"` // "customer:<uuid>" or "case:<service>-<n>"
	Actor   string    `json:"actor"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
}

// Customer is the subject of a customer's reveal.
func Customer(id string) string { return "customer:" + id }

// Case is the subject of a case's reveal (id is "<service>-<n>").
func Case(id string) string { return "case:" + id }

// Request is the body of a reveal: who asks and why.
type Request struct {
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
}

// Bind reads a reveal's body; the error (kind Invalid) names the field at
// fault.
func Bind(c echo.Context) (Request, error) {
	var r Request
	if err := c.Bind(&r); err != nil {
		return r, errkind.Coded(errkind.Invalid, "invalid_body", "body: want JSON with actor and reason")
	}
	r.Actor, r.Reason = strings.TrimSpace(r.Actor), strings.TrimSpace(r.Reason)
	switch {
	case r.Actor == "" || r.Reason == "":
		return r, errkind.Coded(errkind.Invalid, "missing_field", "body: want JSON with actor and reason")
	case len(r.Actor) > 200:
		return r, errkind.Coded(errkind.Invalid, "invalid_actor", "actor: want at most 200 characters")
	case len(r.Reason) > MaxReason:
		return r, errkind.Coded(errkind.Invalid, "invalid_reason", "reason: want at most %d characters", MaxReason)
	}
	return r, nil
}

// Lister lists a service's reveals, newest first: at most limit, with ids
// below before (0: from the newest).
type Lister interface {
	Reveals(ctx context.Context, before int64, limit int) ([]Reveal, error)
}

// Register adds GET /reveals to g, the guarded /admin group of service.
func Register(g *echo.Group, service string, l Lister) {
	g.GET("/reveals", func(c echo.Context) error {
		before, limit, err := page(c)
		if err != nil {
			return err
		}
		got, err := l.Reveals(c.Request().Context(), before, limit)
		if err != nil {
			return err
		}
		for i := range got {
			got[i].Service = service
		}
		return c.JSON(http.StatusOK, map[string]any{"reveals": got})
	})
}

// page reads ?before= and ?limit= (default 100, at most 1000).
func page(c echo.Context) (int64, int, error) {
	var before int64
	limit := 100
	if s := c.QueryParam("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return 0, 0, errkind.Coded(errkind.Invalid, "invalid_before", "before: want a reveal id")
		}
		before = n
	}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			return 0, 0, errkind.Coded(errkind.Invalid, "invalid_limit", "limit: want 1 to 1000")
		}
		limit = n
	}
	return before, limit, nil
}
