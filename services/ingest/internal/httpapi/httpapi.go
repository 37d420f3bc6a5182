// Package httpapi is ingest's customer and order API: the fiscal profile of
// each buyer and the orders a payment is validated against.
package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

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

// bind decodes the JSON body into v. A body that is not UTF-8, or whose
// strings hold a NUL (which PostgreSQL's text refuses), is refused: the
// decoder would otherwise replace bad bytes without a word.
func bind(c echo.Context, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody))
	if err != nil {
		return httpserver.NewHTTPError(http.StatusRequestEntityTooLarge, "body_too_large", "body over 1 MiB")
	}
	if !utf8.Valid(body) || hasEscapedNUL(body) {
		return errkind.Coded(errkind.Invalid, "invalid_text", "body is not UTF-8 text without NUL characters")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errkind.Coded(errkind.Invalid, "malformed_json", "body is not the expected JSON object: %s", err)
	}
	return nil
}

// hasEscapedNUL reports whether a JSON text holds the escape \u0000 (one
// preceded by an odd number of backslashes; \\u0000 is a backslash and
// text).
func hasEscapedNUL(body []byte) bool {
	for off := 0; ; {
		i := bytes.Index(body[off:], []byte(`u0000`))
		if i < 0 {
			return false
		}
		i += off
		n := 0
		for j := i - 1; j >= 0 && body[j] == '\\'; j-- {
			n++
		}
		if n%2 == 1 {
			return true
		}
		off = i + 1
	}
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
