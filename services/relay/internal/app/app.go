// Package app is the relay's composition root: it reads the configuration,
// connects PostgreSQL and SQS, and runs one relay per configured outbox next
// to the operational HTTP server.
package app

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/logging"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/sqsq"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/relay/internal/admin"
	"github.com/onceflow/onceflow/services/relay/internal/relay"
)

// Schema is the PostgreSQL schema the relay owns.
const Schema = "relay"

// Run runs the subcommand named by args[0]: serve (the default), migrate or
// healthcheck.
func Run(ctx context.Context, args []string) error {
	return command.Run(ctx, args, map[string]command.Func{
		"serve":   serve,
		"migrate": db.MigrateCommand(Schema),
	})
}

func serve(ctx context.Context) error {
	loaded, err := config.Load[Config]()
	if err != nil {
		return err
	}
	cfg := loaded.Value
	log, err := logging.New("relay", cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if cfg.Holder == "" {
		cfg.Holder = lease.HolderID("relay")
	}
	log.Info("starting", append(loaded.Fields(), zap.String("holder", cfg.Holder))...)
	return Serve(ctx, log, cfg, nil)
}

// Serve runs the relay with cfg until ctx ends, then shuts down in two
// phases: readiness fails and the relays finish their batch in flight and
// release their leases; then the HTTP server stops within ShutdownTimeout
// and the pool closes. ready, when not nil, receives the bound HTTP address
// once the server listens (tests use HTTP_ADDR 127.0.0.1:0). Errors are
// from start-up (database, queues, listen) or a failing HTTP server.
func Serve(ctx context.Context, log *zap.Logger, cfg Config, ready func(addr string)) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	outboxes, _ := relay.ParseRoutes(cfg.Routes) // checked by Validate
	// Plan each statement for its own arguments: a generic plan made while
	// the outbox was small (a sequential scan) would be kept as it grows,
	// and every mark-published would read the whole table.
	pool, err := pg.Open(ctx, cfg.DatabaseURL, pg.WithSetting("plan_cache_mode", "force_custom_plan"))
	if err != nil {
		return err
	}
	defer pool.Close()
	client, err := sqsq.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint)
	if err != nil {
		return err
	}
	if err := resolveQueues(ctx, client, outboxes); err != nil {
		return err
	}
	reg := httpserver.NewRegistry()
	metrics, err := relay.NewMetrics(reg)
	if err != nil {
		return err
	}
	settings := cfg.settings()
	relays := make([]*relay.Relay, len(outboxes))
	for i, ob := range outboxes {
		relays[i] = relay.New(pool, client, metrics, log.Named("publisher"), ob, settings)
	}
	srv := httpserver.New(log, cfg.HTTPAddr, reg, httpserver.Check{Name: "postgres", Check: pool.Ping})
	group := worker.NewGroup(log, worker.Config{StallAfter: cfg.StallTimeout, ShutdownTimeout: cfg.ShutdownTimeout})
	srv.SetLiveness(group)
	srv.Profiling(cfg.AdminToken)
	admin.Register(srv.Echo(), cfg.AdminToken, pool, tables(outboxes), log.Named("admin"))
	if err := srv.Listen(); err != nil {
		return err
	}
	if ready != nil {
		ready(srv.Addr())
	}
	log.Info("serving", zap.String("addr", srv.Addr()), zap.Int("outboxes", len(relays)))
	return run(ctx, log, srv, group, relays)
}

// run serves HTTP and runs the relays in group until ctx ends, then shuts
// down in two phases (worker.Group.Run).
func run(ctx context.Context, log *zap.Logger, srv *httpserver.Server, group *worker.Group, relays []*relay.Relay) error {
	for _, r := range relays {
		group.Add(func(ctx context.Context) error {
			r.Run(ctx)
			return nil
		})
	}
	err := group.Run(ctx, srv)
	log.Info("stopped")
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
			url, err := sqsq.QueueURL(ctx, c, r.Queue)
			if err != nil {
				return fmt.Errorf("RELAY_ROUTES: outbox %s: %w", ob.Table, err)
			}
			ob.Routes[i].Queue = url
		}
	}
	return nil
}
