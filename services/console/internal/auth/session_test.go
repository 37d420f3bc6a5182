package auth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/services/console/internal/auth"
)

// serve runs the session middleware: /in signs ana in, /who needs a
// session, /act needs an operator.
func serve(t *testing.T, s *auth.Sessions, role string) *echo.Echo {
	t.Helper()
	e := echo.New()
	e.GET("/in", func(c echo.Context) error { return s.Start(c, auth.User{Name: "ana", Role: role}) })
	g := e.Group("", s.Require)
	g.GET("/who", func(c echo.Context) error { return c.String(http.StatusOK, auth.Current(c).Name) })
	g.POST("/act", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }, auth.RequireOperator)
	return e
}

func do(e *echo.Echo, method, path string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func TestSessionCookie(t *testing.T) {
	t.Parallel()
	s, err := auth.NewSessions([]byte(strings.Repeat("k", 32)), time.Hour, true)
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, s, auth.Viewer)
	cookies := do(e, http.MethodGet, "/in").Result().Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || !cookies[0].Secure || cookies[0].SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie %+v, want one HTTP-only, Secure, SameSite=Lax cookie", cookies)
	}
	if rec := do(e, http.MethodGet, "/who", cookies[0]); rec.Code != http.StatusOK || rec.Body.String() != "ana" {
		t.Errorf("with the cookie: %d %q, want 200 ana", rec.Code, rec.Body)
	}
	if rec := do(e, http.MethodGet, "/who"); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
		t.Errorf("without a cookie: %d to %q, want a redirect to /login", rec.Code, rec.Header().Get("Location"))
	}
	forged := *cookies[0]
	forged.Value = strings.ToUpper(forged.Value[:10]) + forged.Value[10:]
	if rec := do(e, http.MethodGet, "/who", &forged); rec.Code != http.StatusSeeOther {
		t.Errorf("with a tampered cookie: %d, want a redirect to sign in", rec.Code)
	}
	if rec := do(e, http.MethodPost, "/act", cookies[0]); rec.Code != http.StatusForbidden {
		t.Errorf("a viewer acting: %d, want 403", rec.Code)
	}
	other, _ := auth.NewSessions([]byte(strings.Repeat("z", 32)), time.Hour, true)
	if rec := do(serve(t, other, auth.Operator), http.MethodGet, "/who", cookies[0]); rec.Code != http.StatusSeeOther {
		t.Errorf("a cookie signed with another key: %d, want a redirect to sign in", rec.Code)
	}
}

func TestOperatorMayAct(t *testing.T) {
	t.Parallel()
	s, _ := auth.NewSessions([]byte(strings.Repeat("k", 32)), time.Hour, false)
	e := serve(t, s, auth.Operator)
	c := do(e, http.MethodGet, "/in").Result().Cookies()[0]
	if c.Secure {
		t.Error("cookie Secure although the console was told it serves plain HTTP")
	}
	if rec := do(e, http.MethodPost, "/act", c); rec.Code != http.StatusNoContent {
		t.Errorf("an operator acting: %d, want 204", rec.Code)
	}
}

func TestSessionKeyTooShort(t *testing.T) {
	t.Parallel()
	if _, err := auth.NewSessions([]byte("short"), time.Hour, true); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}
