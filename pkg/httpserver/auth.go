package httpserver

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// BearerAuth refuses a request unless it carries "Authorization: Bearer
// <token>"; the comparison is constant-time. An empty token refuses every
// request, so an unset secret never opens an endpoint. envName is the
// variable holding the token, named in the 401 body.
func BearerAuth(token, envName string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			got, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
			if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				return NewHTTPError(http.StatusUnauthorized, "unauthorized", "want Authorization: Bearer <"+envName+">")
			}
			return next(c)
		}
	}
}
