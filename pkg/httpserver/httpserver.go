// Package httpserver is the echo server every service runs: health,
// readiness and Prometheus endpoints, JSON error bodies mapped from error
// kinds, and a graceful shutdown. /healthz asks a Liveness (the process's
// worker.Group) whether the background loops are alive.
package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/listener"
)

// Check is a readiness probe of one dependency.
type Check struct {
	Name  string
	Check func(context.Context) error
}

// Server wraps an echo instance with the operational endpoints.
type Server struct {
	echo     *echo.Echo
	log      *zap.Logger
	addr     string
	checks   []Check
	draining atomic.Bool
	ln       net.Listener
	tls      *tls.Config
	live     Liveness
}

// Liveness is what /healthz asks: whether the process's background loops
// still make progress. *worker.Group satisfies it.
type Liveness interface {
	// Stalled returns an error naming what is stuck at now, or nil.
	Stalled(now time.Time) error
}

// NewRegistry returns a Prometheus registry with the Go and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// New builds a server for addr serving /healthz, /readyz (running checks) and
// /metrics (from reg). Routes are added through Echo.
func New(log *zap.Logger, addr string, reg *prometheus.Registry, checks ...Check) *Server {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Server.ReadHeaderTimeout = 5 * time.Second
	e.Server.ReadTimeout = 30 * time.Second
	e.Server.WriteTimeout = 30 * time.Second
	e.Server.IdleTimeout = 120 * time.Second
	s := &Server{echo: e, log: log, addr: addr, checks: checks}
	e.Use(middleware.RequestID()) // X-Request-Id: kept from the caller, or made; logs name it
	e.HTTPErrorHandler = s.handleError
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.ready)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	return s
}

// SetLiveness makes /healthz ask l whether the loops are alive; call it
// before Serve. Without one /healthz always answers ok.
func (s *Server) SetLiveness(l Liveness) { s.live = l }

// RequestID is the request's X-Request-Id, for log lines.
func RequestID(c echo.Context) string { return c.Response().Header().Get(echo.HeaderXRequestID) }

// Echo returns the echo instance so a service can add its routes.
func (s *Server) Echo() *echo.Echo { return s.echo }

// UseTLS makes the server answer HTTPS with the PEM certificate and key;
// call it before Listen.
func (s *Server) UseTLS(certFile, keyFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("TLS_CERT_FILE/TLS_KEY_FILE: %w", err)
	}
	s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return nil
}

// Listen binds the address, or takes over the socket a parent process
// passed down when it reads "fd:N" (package listener); Addr is valid
// afterwards (useful with port 0).
func (s *Server) Listen() error {
	ln, err := listener.Listen(s.addr)
	if err != nil {
		return err
	}
	if s.tls != nil {
		ln = tls.NewListener(ln, s.tls)
	}
	s.ln = ln
	return nil
}

// Addr returns the bound address, or the configured one before Listen.
func (s *Server) Addr() string {
	if s.ln != nil {
		return s.ln.Addr().String()
	}
	return s.addr
}

// Drain makes /readyz fail so load balancers stop sending new work; the
// first phase of shutdown.
func (s *Server) Drain() { s.draining.Store(true) }

// Serve serves until Shutdown; it listens first if Listen was not called.
func (s *Server) Serve() error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.echo.Listener = s.ln
	if err := s.echo.Start(""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	return nil
}

// Shutdown stops accepting connections and waits for in-flight requests
// until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.echo.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown http: %w", err)
	}
	return nil
}

// healthz is the liveness probe: it never checks dependencies, only that
// every background loop still makes progress.
func (s *Server) healthz(c echo.Context) error {
	if s.live != nil {
		if err := s.live.Stalled(time.Now()); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "stalled", "reason": err.Error()})
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) ready(c echo.Context) error {
	if s.draining.Load() {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "draining"})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	failed := map[string]string{}
	for _, ch := range s.checks {
		if err := ch.Check(ctx); err != nil {
			failed[ch.Name] = err.Error()
		}
	}
	if len(failed) > 0 {
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "unready", "failed": failed})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
