package httpserver

import (
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"
)

// Profiling serves Go's runtime profiles (net/http/pprof) under
// /debug/pprof/ on the admin port, behind the admin token: a CPU profile
// (/debug/pprof/profile?seconds=N, N below the 30 s write timeout), heap,
// goroutines, an execution trace. Like the admin API, an empty token keeps
// them closed.
func (s *Server) Profiling(token string) {
	g := s.admin.echo.Group("/debug/pprof", BearerAuth(token, "ADMIN_TOKEN"))
	g.GET("/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	g.GET("/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
	g.GET("/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	g.GET("/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	g.GET("/*", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
}

// Admin returns the /admin route group on the admin port, guarded by the
// admin token (an empty token refuses every request), and serves the
// runtime profiles behind the same token. Every service registers its
// operator endpoints on this group and nowhere else.
func (s *Server) Admin(token string) *echo.Group {
	s.Profiling(token)
	return s.admin.echo.Group("/admin", BearerAuth(token, "ADMIN_TOKEN"))
}
