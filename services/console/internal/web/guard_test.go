package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// A browser's cross-site POST is refused outright; any other request goes
// on without Sec-Fetch-Site, so echo's CSRF middleware checks its token.
func TestCrossSiteGuard(t *testing.T) {
	t.Parallel()
	var seen string
	next := func(c echo.Context) error {
		seen = c.Request().Header.Get(echo.HeaderSecFetchSite)
		return c.NoContent(http.StatusNoContent)
	}
	for _, tc := range []struct {
		method, site string
		want         int
	}{
		{http.MethodPost, "cross-site", http.StatusForbidden},
		{http.MethodPost, "same-origin", http.StatusNoContent},
		{http.MethodGet, "cross-site", http.StatusNoContent},
	} {
		e := echo.New()
		req := httptest.NewRequest(tc.method, "/cases/x/resolve", nil)
		req.Header.Set(echo.HeaderSecFetchSite, tc.site)
		rec := httptest.NewRecorder()
		seen = "unset"
		err := crossSiteGuard(next)(e.NewContext(req, rec))
		code := rec.Code
		if he, ok := err.(*echo.HTTPError); ok {
			code = he.Code
		}
		if code != tc.want {
			t.Errorf("%s with Sec-Fetch-Site %s: %d, want %d", tc.method, tc.site, code, tc.want)
		}
		if tc.want != http.StatusForbidden && seen != "" {
			t.Errorf("%s %s: the next handler saw Sec-Fetch-Site %q, want it removed", tc.method, tc.site, seen)
		}
	}
}
