// Package app is the relay's composition root: New connects PostgreSQL and
// SQS and builds one relay per configured outbox beside the operational
// HTTP server; Run runs them until its context ends.
package app

import (
	"context"
	"fmt"
	"github.com/labstack/echo/v4"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/api/openapi"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/relay/internal/admin"
	"github.com/onceflow/onceflow/services/relay/internal/relay"
)

// Schema is the PostgreSQL schema the relay owns.
const Schema = "relay"

// Spec is the relay binary as service.Main runs it: serve (the default),
// migrate and healthcheck.
var Spec = service.Spec[Config, *App]{Name: "relay", Schema: Schema, New: New}

// App is a relay ready to run: its pool is open, its queues resolved and its
// HTTP server listening.
type App struct {
	log   *zap.Logger
	pool  *pgxpool.Pool
	srv   *httpserver.Server
	group *worker.Group
}

// New connects PostgreSQL and SQS, resolves every route's queue, builds one
// relay per outbox and the HTTP server with the operator endpoints, and
// binds the listener (HTTP_ADDR 127.0.0.1:0 picks a port; see Addr). Errors
// are from start-up (database, queues, listen); on error whatever New opened
// is closed again.
func New(ctx context.Context, cfg Config, log *zap.Logger) (_ *App, err error) {
	outboxes, err := relay.ParseRoutes(cfg.Routes)
	if err != nil {
		return nil, fmt.Errorf("RELAY_ROUTES: %w", err)
	}
	pool, err := pg.Open(ctx, cfg.DatabaseURL, relay.PoolOptions...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			pool.Close()
		}
	}()
	client, err := sqsclient.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint, sqsclient.WithLogger(log.Named("sqs")))
	if err != nil {
		return nil, err
	}
	if err := resolveQueues(ctx, client, outboxes); err != nil {
		return nil, err
	}
	a, err := build(cfg, log, pool, client, outboxes)
	if err != nil {
		return nil, err
	}
	if err := a.srv.Listen(); err != nil {
		return nil, err
	}
	return a, nil
}

// build wires the relays, their group and the HTTP server over the opened
// pool and client.
func build(cfg Config, log *zap.Logger, pool *pgxpool.Pool, client *sqs.Client, outboxes []relay.Outbox) (*App, error) {
	reg := httpserver.NewRegistry()
	metrics, err := relay.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	settings := cfg.settings()
	group := worker.NewGroup(log, worker.Config{StallAfter: cfg.StallTimeout, ShutdownTimeout: cfg.ShutdownTimeout})
	for _, ob := range outboxes {
		r := relay.New(pool, client, metrics, log.Named("publisher"), ob, settings)
		group.Add(func(ctx context.Context) error {
			r.Run(ctx)
			return nil
		})
	}
	srv := httpserver.New(log, httpserver.Addrs{Public: cfg.HTTPAddr, Admin: cfg.AdminAddr}, reg, httpserver.Check{Name: "postgres", Check: pool.Ping})
	srv.SetLiveness(group)
	g := srv.Admin(cfg.AdminToken)
	admin.New(pool, tables(outboxes), log.Named("admin")).Register(g)
	openapi.Serve(g, "relay")
	log.Info("relaying", zap.String("holder", settings.Holder), zap.Int("outboxes", len(outboxes)))
	if settings.Signer == nil {
		log.Warn("publishing unsigned messages: set RELAY_SIGNING_KEY, or the invoicer refuses billing messages and provider events")
	} else {
		log.Info("signing messages", zap.String("key_id", settings.Signer.ID))
	}
	return &App{log: log, pool: pool, srv: srv, group: group}, nil
}

// Addr is the bound HTTP address.
func (a *App) Addr() string { return a.srv.Addr() }

// Routes returns the routes both ports serve (for the test that holds
// them to the OpenAPI document).
func (a *App) Routes() []*echo.Route { return a.srv.Routes() }

// AdminAddr is the bound admin address (ADMIN_ADDR: /admin, /metrics,
// /debug/pprof), with the port chosen when it asked for :0.
func (a *App) AdminAddr() string { return a.srv.AdminAddr() }

// Run serves HTTP and runs the relays until ctx ends, then shuts down in
// two phases (worker.Group.Run): readiness fails and the relays finish
// their batch in flight and release their leases; then the HTTP server
// stops within SHUTDOWN_TIMEOUT and the pool closes. The error is a failing
// HTTP server's or its shutdown's.
func (a *App) Run(ctx context.Context) error {
	defer a.pool.Close()
	err := a.group.Run(ctx, a.srv)
	a.log.Info("stopped")
	return err
}

func tables(outboxes []relay.Outbox) []outbox.Table {
	out := make([]outbox.Table, len(outboxes))
	for i, ob := range outboxes {
		out[i] = ob.Table
	}
	return out
}

// resolveQueues replaces every route's queue name with its URL.
func resolveQueues(ctx context.Context, c *sqs.Client, outboxes []relay.Outbox) error {
	for _, ob := range outboxes {
		for i, r := range ob.Routes {
			url, err := sqsclient.QueueURL(ctx, c, r.Queue)
			if err != nil {
				return fmt.Errorf("RELAY_ROUTES: outbox %s: %w", ob.Table, err)
			}
			ob.Routes[i].Queue = url
		}
	}
	return nil
}
