package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"
)

// loginData is the sign-in page.
type loginData struct {
	Error string
	Local bool // a users file is configured
	OIDC  bool
}

func (h *Handler) loginPage(c echo.Context) error {
	return h.render(c, http.StatusOK, "login", "Sign in", loginData{Local: h.users != nil, OIDC: h.oidc != nil})
}

// login checks a login and password against the users file; a wrong one
// answers 401 with the form again, naming no more than that.
func (h *Handler) login(c echo.Context) error {
	if h.users == nil {
		return echo.NewHTTPError(http.StatusNotFound, "no users file is configured: sign in with OIDC")
	}
	u, err := h.users.Check(c.FormValue("login"), c.FormValue("password"))
	if err != nil {
		h.audit.Info("sign-in refused")
		return h.render(c, http.StatusUnauthorized, "login", "Sign in", loginData{Error: err.Error(), Local: true, OIDC: h.oidc != nil})
	}
	if err := h.sessions.Start(c, u); err != nil {
		return err
	}
	h.audit.Info("signed in", zap.String("user", u.Name), zap.String("role", u.Role))
	return c.Redirect(http.StatusSeeOther, "/")
}

func (h *Handler) logout(c echo.Context) error {
	h.sessions.End(c)
	return c.Redirect(http.StatusSeeOther, "/login")
}

func (h *Handler) oidcStart(c echo.Context) error { return h.oidc.Start(c) }

// oidcCallback finishes an OIDC sign-in; a refusal answers 401 naming why.
func (h *Handler) oidcCallback(c echo.Context) error {
	u, err := h.oidc.Finish(c)
	if err != nil {
		h.audit.Info("oidc sign-in refused", zap.Error(err))
		return echo.NewHTTPError(http.StatusUnauthorized, "sign-in refused: "+err.Error())
	}
	if err := h.sessions.Start(c, u); err != nil {
		return err
	}
	h.audit.Info("signed in", zap.String("user", u.Name), zap.String("role", u.Role))
	return c.Redirect(http.StatusSeeOther, "/")
}
