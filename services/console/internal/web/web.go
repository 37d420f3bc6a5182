// Package web is the console's HTML: the pipeline board, the cases inbox
// with its actions, the trace of one identifier and the sign-in pages,
// rendered on the server from html/template with the templates and assets
// embedded in the binary. Every action is a POST carrying a CSRF token.
package web

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/console/internal/adminapi"
	"github.com/onceflow/onceflow/services/console/internal/auth"
	"github.com/onceflow/onceflow/services/console/internal/queues"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options are the console's pages' settings.
type Options struct {
	// Refresh is how often the board reloads its figures.
	Refresh time.Duration
	// TraceURL links a trace id to the tracing backend: "{trace_id}" is
	// replaced by the id; empty shows no link.
	TraceURL string
	// SecureCookies marks the CSRF cookie Secure, like the session's.
	SecureCookies bool
}

// Handler serves the console's pages.
type Handler struct {
	api      *adminapi.Client
	queues   *queues.Reader
	sessions *auth.Sessions
	users    *auth.Users
	oidc     *auth.OIDC
	log      *zap.Logger
	audit    *zap.Logger
	opts     Options
	pages    map[string]*template.Template
}

// New returns the handler; users or oidc may be nil (not configured).
func New(api *adminapi.Client, q *queues.Reader, s *auth.Sessions, users *auth.Users, oidc *auth.OIDC, log *zap.Logger, opts Options) (*Handler, error) {
	h := &Handler{api: api, queues: q, sessions: s, users: users, oidc: oidc, log: log, audit: log.Named("audit"), opts: opts, pages: map[string]*template.Template{}}
	for _, page := range []string{"login", "board", "cases", "case", "bulk", "trace", "reveal", "reveals", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, err
		}
		h.pages[page] = t
	}
	return h, nil
}

// Register adds every route to e: the assets and sign-in pages for
// everyone, the pages for signed-in users, the actions for operators;
// every request passes the CSRF check (unsafe methods need the token).
func (h *Handler) Register(e *echo.Echo) {
	assets, _ := fs.Sub(assetFS, "assets")
	e.HTTPErrorHandler = h.handleError
	e.Use(securityHeaders, crossSiteGuard, middleware.CSRFWithConfig(middleware.CSRFConfig{
		TokenLookup: "form:_csrf,header:X-CSRF-Token", CookieName: "console_csrf", CookiePath: "/",
		CookieHTTPOnly: true, CookieSecure: h.opts.SecureCookies, CookieSameSite: http.SameSiteStrictMode, ContextKey: "csrf",
		Skipper: func(c echo.Context) bool { return isProbe(c.Path()) },
		ErrorHandler: func(error, echo.Context) error {
			return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token")
		},
	}))
	e.StaticFS("/assets", assets)
	e.GET("/login", h.loginPage)
	e.POST("/login", h.login)
	if h.oidc != nil {
		e.GET("/login/oidc", h.oidcStart)
		e.GET("/login/oidc/callback", h.oidcCallback)
	}
	g := e.Group("", h.sessions.Require)
	g.POST("/logout", h.logout)
	g.GET("/", h.board)
	g.GET("/board/figures", h.boardFigures)
	g.GET("/cases", h.listCases)
	g.GET("/cases/:id", h.showCase)
	g.GET("/trace", h.trace)
	g.GET("/reveals", h.revealsPage)
	op := g.Group("", auth.RequireOperator)
	op.POST("/cases/:id/resolve", h.resolveCase)
	op.POST("/cases/:id/reveal", h.revealCase)
	op.GET("/bulk", h.bulkConfirm)
	op.POST("/bulk", h.bulkApply)
	op.POST("/customers/:id/reveal", h.revealCustomer)
}

// isProbe tells the probe and metrics routes, which carry no session.
func isProbe(path string) bool {
	return path == "/healthz" || path == "/readyz" || path == "/metrics"
}

// crossSiteGuard refuses a state-changing request a browser marks as
// coming from another site, then hides Sec-Fetch-Site from echo's CSRF
// middleware, which would otherwise let same-origin requests through
// without their token: every action must carry the token.
func crossSiteGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get(echo.HeaderSecFetchSite) == "cross-site" {
			return echo.NewHTTPError(http.StatusForbidden, "cross-site request refused")
		}
		r.Header.Del(echo.HeaderSecFetchSite)
		return next(c)
	}
}

// securityHeaders keeps pages out of frames and scripts to our own.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		hd := c.Response().Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		return next(c)
	}
}

// page is what every template gets.
type page struct {
	Title string
	User  auth.User
	CSRF  string
	Data  any
}

func (h *Handler) render(c echo.Context, status int, name, title string, data any) error {
	csrf, _ := c.Get("csrf").(string)
	var b strings.Builder
	if err := h.pages[name].Execute(&b, page{Title: title, User: auth.Current(c), CSRF: csrf, Data: data}); err != nil {
		return err
	}
	return c.HTML(status, b.String())
}

// handleError answers an error as a page naming the problem for a
// browser, or as the services' JSON error body for anything else.
func (h *Handler) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, code, msg := describe(err)
	if status >= 500 {
		h.log.Error("request failed", zap.String("path", c.Path()), zap.Error(err))
	}
	if strings.Contains(c.Request().Header.Get("Accept"), "text/html") {
		if rerr := h.render(c, status, "error", http.StatusText(status), map[string]string{"Code": code, "Message": msg}); rerr == nil {
			return
		}
	}
	_ = c.JSON(status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// describe maps an error to a status, a code and a message: echo's own,
// a service's refusal (passed on), or a service out of reach (502).
func describe(err error) (int, string, string) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg, _ := he.Message.(string)
		return he.Code, strings.ReplaceAll(strings.ToLower(http.StatusText(he.Code)), " ", "_"), msg
	}
	var ae *adminapi.Error
	if errors.As(err, &ae) {
		status := ae.Status
		if status >= 500 {
			status = http.StatusBadGateway
		}
		return status, ae.Code, ae.Error()
	}
	var in *inputError
	if errors.As(err, &in) {
		return http.StatusBadRequest, "invalid_" + in.field, in.Error()
	}
	return http.StatusBadGateway, "unavailable", "a service did not answer; try again"
}

// inputError is bad input in a form or query: it names the field.
type inputError struct{ field, want string }

func (e *inputError) Error() string { return e.field + ": " + e.want }
