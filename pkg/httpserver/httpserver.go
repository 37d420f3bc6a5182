// Package httpserver is the pair of echo servers every service runs. The
// public listener (HTTP_ADDR) serves what callers outside the cluster may
// reach: the service's own routes (ingest's webhooks and /v1), /healthz and
// a /readyz that says only ready, unready or draining. The admin listener
// (ADMIN_ADDR) serves what only operators, Prometheus and the console may
// reach: /admin, /metrics, /debug/pprof and a /readyz naming each failed
// check and its error. Both answer JSON error bodies mapped from error
// kinds and shut down gracefully. /healthz asks a Liveness (the process's
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

// Addrs are the two addresses a Server listens on, host:port or fd:N
// (package listener): Public for callers from anywhere, Admin for
// operators and monitoring only.
type Addrs struct {
	Public, Admin string
}

// Server is the public and the admin echo instance with the operational
// endpoints.
type Server struct {
	public   *port
	admin    *port
	log      *zap.Logger
	checks   []Check
	draining atomic.Bool
	tls      *tls.Config
	live     Liveness
}

// port is one echo instance and the address it serves.
type port struct {
	echo *echo.Echo
	addr string
	ln   net.Listener
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

// New builds a server for addrs. Both ports serve /healthz and /readyz
// (running checks: the public one answers only the verdict, the admin one
// names each failed check and its error); the admin port also serves
// /metrics (from reg). A service adds its public routes through Echo and
// its operator routes through Admin.
func New(log *zap.Logger, addrs Addrs, reg *prometheus.Registry, checks ...Check) *Server {
	s := &Server{log: log, checks: checks}
	s.public, s.admin = s.newPort(addrs.Public), s.newPort(addrs.Admin)
	s.public.echo.GET("/readyz", s.ready)
	s.admin.echo.GET("/readyz", s.readyDetail)
	s.admin.echo.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	return s
}

// newPort builds an echo instance with the timeouts, request ids, error
// bodies and /healthz every port shares.
func (s *Server) newPort(addr string) *port {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Server.ReadHeaderTimeout = 5 * time.Second
	e.Server.ReadTimeout = 30 * time.Second
	e.Server.WriteTimeout = 30 * time.Second
	e.Server.IdleTimeout = 120 * time.Second
	e.Use(middleware.RequestID()) // X-Request-Id: kept from the caller, or made; logs name it
	e.HTTPErrorHandler = s.handleError
	e.GET("/healthz", s.healthz)
	return &port{echo: e, addr: addr}
}

// SetLiveness makes /healthz ask l whether the loops are alive; call it
// before Serve. Without one /healthz always answers ok.
func (s *Server) SetLiveness(l Liveness) { s.live = l }

// RequestID is the request's X-Request-Id, for log lines.
func RequestID(c echo.Context) string { return c.Response().Header().Get(echo.HeaderXRequestID) }

// Echo returns the public echo instance so a service can add the routes
// callers from anywhere may reach.
func (s *Server) Echo() *echo.Echo { return s.public.echo }

// AdminEcho returns the admin echo instance: routes added here are reached
// only on ADMIN_ADDR. Operator routes belong on the guarded group Admin
// returns; this is for what must stay unguarded there (as /metrics is).
func (s *Server) AdminEcho() *echo.Echo { return s.admin.echo }

// Routes returns the routes both ports serve, the public one's first.
func (s *Server) Routes() []*echo.Route {
	return append(s.public.echo.Routes(), s.admin.echo.Routes()...)
}

// UseTLS makes both ports answer HTTPS with the PEM certificate and key;
// call it before Listen.
func (s *Server) UseTLS(certFile, keyFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("TLS_CERT_FILE/TLS_KEY_FILE: %w", err)
	}
	s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return nil
}

// Listen binds both addresses, or takes over the sockets a parent process
// passed down when one reads "fd:N" (package listener); Addr and AdminAddr
// are valid afterwards (useful with port 0). On an error nothing stays
// bound.
func (s *Server) Listen() error {
	for _, p := range []*port{s.public, s.admin} {
		ln, err := listener.Listen(p.addr)
		if err != nil {
			s.closeListeners()
			return err
		}
		if s.tls != nil {
			ln = tls.NewListener(ln, s.tls)
		}
		p.ln = ln
	}
	return nil
}

// closeListeners releases whatever Listen bound.
func (s *Server) closeListeners() {
	for _, p := range []*port{s.public, s.admin} {
		if p.ln != nil {
			_ = p.ln.Close()
			p.ln = nil
		}
	}
}

// Addr returns the public bound address, or the configured one before
// Listen.
func (s *Server) Addr() string { return s.public.bound() }

// AdminAddr returns the admin bound address, or the configured one before
// Listen.
func (s *Server) AdminAddr() string { return s.admin.bound() }

func (p *port) bound() string {
	if p.ln != nil {
		return p.ln.Addr().String()
	}
	return p.addr
}

// Drain makes /readyz fail so load balancers stop sending new work; the
// first phase of shutdown.
func (s *Server) Drain() { s.draining.Store(true) }

// Serve serves both ports until Shutdown; it listens first if Listen was
// not called. When one port fails the other is closed, so Serve returns.
func (s *Server) Serve() error {
	if s.public.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.log.Info("serving admin", zap.String("addr", s.AdminAddr()))
	adminDone := make(chan error, 1)
	go func() { adminDone <- s.admin.serve(s.public) }()
	err := s.public.serve(s.admin)
	return errors.Join(err, <-adminDone)
}

// serve serves p until its server closes; on a failure it closes other.
func (p *port) serve(other *port) error {
	p.echo.Listener = p.ln
	if err := p.echo.Start(""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = other.echo.Close()
		return fmt.Errorf("serve http %s: %w", p.ln.Addr(), err)
	}
	return nil
}

// Shutdown stops accepting connections on both ports and waits for
// in-flight requests until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	for _, p := range []*port{s.public, s.admin} {
		if err := p.echo.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown http %s: %w", p.bound(), err))
		}
	}
	return errors.Join(errs...)
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

// ready is the public readiness probe: the verdict only, never why, since
// a check's error may name hosts, users or queries.
func (s *Server) ready(c echo.Context) error {
	status, body := s.readiness(c.Request().Context())
	delete(body, "failed")
	return c.JSON(status, body)
}

// readyDetail is the admin readiness probe: the verdict and, for each
// failed check, its error.
func (s *Server) readyDetail(c echo.Context) error {
	status, body := s.readiness(c.Request().Context())
	return c.JSON(status, body)
}

// readiness runs the checks (unless draining) and returns the status code
// and body: {"status": ready|unready|draining, "failed": {name: error}}.
func (s *Server) readiness(ctx context.Context) (int, map[string]any) {
	if s.draining.Load() {
		return http.StatusServiceUnavailable, map[string]any{"status": "draining"}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	failed := map[string]string{}
	for _, ch := range s.checks {
		if err := ch.Check(ctx); err != nil {
			failed[ch.Name] = err.Error()
		}
	}
	if len(failed) > 0 {
		return http.StatusServiceUnavailable, map[string]any{"status": "unready", "failed": failed}
	}
	return http.StatusOK, map[string]any{"status": "ready"}
}
