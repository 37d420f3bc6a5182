// Package httpapi is ingest's customer and order API: the fiscal profile of
// each buyer and the orders a payment is validated against.
package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// API serves /v1/customers, /v1/orders and /v1/refunds behind a bearer
// token.
type API struct {
	store *store.Store
	token string
}

// New returns the API; an empty token refuses every request.
func New(st *store.Store, token string) *API { return &API{store: st, token: token} }

// Register adds the routes to e.
func (a *API) Register(e *echo.Echo) {
	g := e.Group("/v1", httpserver.BearerAuth(a.token, "INGEST_API_TOKEN"))
	g.POST("/customers", a.createCustomer, a.idempotent)
	g.GET("/customers", a.listCustomers)
	g.GET("/customers/:id", a.getCustomer)
	g.POST("/orders", a.createOrder, a.idempotent)
	g.GET("/orders", a.listOrders)
	g.GET("/orders/:id", a.getOrder)
	g.PATCH("/orders/:id", a.amendOrder, requireKey, a.idempotent)
	g.POST("/refunds", a.watchRefund, a.idempotent)
}

// maxBody bounds a request body.
const maxBody = 1 << 20

// fieldErrors answers 422 naming every invalid field.
type fieldErrors map[string]string

func (f fieldErrors) require(field, value string) {
	if strings.TrimSpace(value) == "" {
		f[field] = "required"
	}
}

func (f fieldErrors) answer(c echo.Context) error {
	return c.JSON(http.StatusUnprocessableEntity, map[string]any{
		"error": map[string]any{"code": "invalid_fields", "message": "some fields are invalid", "fields": f},
	})
}

func bind(c echo.Context, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errkind.Coded(errkind.Invalid, "malformed_json", "body is not the expected JSON object: %s", err)
	}
	return nil
}

func parseID(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, errNoSuchID
	}
	return id, nil
}

// errNoSuchID answers 404 for an id that names nothing.
var errNoSuchID = errkind.Coded(errkind.NotFound, "not_found", "no such id")

// notFound answers errNoSuchID for an error of kind NotFound, and err
// otherwise.
func notFound(err error) error {
	if errkind.Is(err, errkind.NotFound) {
		return errNoSuchID
	}
	return err
}

// conflict answers 409 with message for an error of kind Conflict, and err
// otherwise.
func conflict(err error, message string) error {
	if errkind.Is(err, errkind.Conflict) {
		return errkind.Coded(errkind.Conflict, "conflict", "%s", message)
	}
	return err
}

// orderLines is the JSON shape of an order's lines.
type orderLines = []apply.OrderLine
