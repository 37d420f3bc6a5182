package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// page is a keyset position: the creation time and id of the last item
// seen, written as an opaque cursor.
type page struct {
	afterCreated time.Time
	afterID      uuid.UUID
	limit        int
}

// readPage parses ?limit= (1–500, default 100) and ?cursor=.
func readPage(c echo.Context) (page, error) {
	p := page{limit: 100}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return page{}, errkind.Coded(errkind.Invalid, "invalid_limit", "limit: want 1 to 500")
		}
		p.limit = n
	}
	if s := c.QueryParam("cursor"); s != "" {
		raw, err := base64.RawURLEncoding.DecodeString(s)
		at, id, ok := strings.Cut(string(raw), "|")
		t, terr := time.Parse(time.RFC3339Nano, at)
		u, uerr := uuid.Parse(id)
		if err != nil || !ok || terr != nil || uerr != nil {
			return page{}, errkind.Coded(errkind.Invalid, "invalid_cursor", "cursor: want the next_cursor of a previous page")
		}
		p.afterCreated, p.afterID = t, u
	}
	return p, nil
}

// cursor returns the next page's cursor after an item, or "" when the page
// was not full.
func cursor(full bool, created time.Time, id uuid.UUID) string {
	if !full {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(created.UTC().Format(time.RFC3339Nano) + "|" + id.String()))
}

// listPage answers one keyset page of rows under key, rendered by out.
func listPage[R, T any](c echo.Context, key string, fetch func(ctx context.Context, after time.Time, id uuid.UUID, limit int) ([]R, error),
	out func(R) T, position func(R) (time.Time, uuid.UUID)) error {
	p, err := readPage(c)
	if err != nil {
		return err
	}
	rows, err := fetch(c.Request().Context(), p.afterCreated, p.afterID, p.limit)
	if err != nil {
		return err
	}
	items := make([]T, len(rows))
	next := ""
	for i, r := range rows {
		items[i] = out(r)
		created, id := position(r)
		next = cursor(len(rows) == p.limit, created, id)
	}
	return c.JSON(http.StatusOK, map[string]any{key: items, "next_cursor": next})
}

func (a *API) listCustomers(c echo.Context) error {
	return listPage(c, "customers", a.store.Customers, customerOut,
		func(r store.Customer) (time.Time, uuid.UUID) { return r.CreatedAt, r.ID })
}

func (a *API) listOrders(c echo.Context) error {
	return listPage(c, "orders", a.store.Orders, orderOut,
		func(r store.Order) (time.Time, uuid.UUID) { return r.CreatedAt, r.ID })
}
