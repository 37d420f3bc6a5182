// Command fiscal runs the InvoiCy simulator (package sandbox/fiscalsim).
//
//	fiscal [serve]       serve until SIGINT/SIGTERM (default)
//	fiscal healthcheck   exit 0 if GET http://$FISCAL_ADDR/healthz answers 200, else 1
//
// Environment: LOG_LEVEL (default info), FISCAL_ADDR (default 127.0.0.1:8092;
// fd:N serves on a listening socket passed down as descriptor N, see pkg/listener), INVOICY_EMP_CODIGO,
// INVOICY_EMP_PK and INVOICY_ACCESS_KEY (sandbox defaults); with
// FISCAL_WEBHOOK_URL and FISCAL_WEBHOOK_SECRET (whsec_…) set, every status
// change is POSTed there as a Standard Webhooks–signed provider webhook.
package main

import (
	"context"
	"fmt"
	"net"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/listener"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

func main() { server.Main("fiscal", run) }

// config is the binary's environment.
type config struct {
	addr                        string
	empCodigo, empPK, accessKey string
	webhook                     fiscalsim.Webhook
	profile                     fiscalsim.Profile
}

func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		addr:      server.Env(getenv, "FISCAL_ADDR", "127.0.0.1:8092"),
		empCodigo: server.Env(getenv, "INVOICY_EMP_CODIGO", "sandbox-emp"),
		empPK:     server.Env(getenv, "INVOICY_EMP_PK", "sandbox-partner-key"),
		accessKey: server.Env(getenv, "INVOICY_ACCESS_KEY", "sandbox-access-key"),
		webhook:   fiscalsim.Webhook{URL: getenv("FISCAL_WEBHOOK_URL"), Secret: getenv("FISCAL_WEBHOOK_SECRET")},
	}
	if _, _, err := net.SplitHostPort(cfg.addr); err != nil && !listener.Inherited(cfg.addr) {
		return config{}, fmt.Errorf("FISCAL_ADDR %q: want host:port (or fd:N, a socket passed down)", cfg.addr)
	}
	if err := fiscalsim.CheckWebhook(cfg.webhook); err != nil {
		return config{}, fmt.Errorf("FISCAL_WEBHOOK_SECRET: %w", err)
	}
	profile, err := loadProfile(getenv)
	if err != nil {
		return config{}, err
	}
	cfg.profile = profile
	return cfg, nil
}

// run executes the subcommand in args ("serve" when empty).
func run(ctx context.Context, log *zap.Logger, args []string, getenv func(string) string) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cmd := "serve"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "serve":
		return serve(ctx, log, cfg)
	case "healthcheck":
		return command.Probe(ctx, cfg.addr)
	}
	return fmt.Errorf("unknown command %q: want serve or healthcheck", cmd)
}

func serve(ctx context.Context, log *zap.Logger, cfg config) error {
	log.Info("config", zap.String("addr", cfg.addr), zap.String("emp_codigo", cfg.empCodigo),
		zap.String("emp_pk", server.Mask(cfg.empPK)), zap.String("access_key", server.Mask(cfg.accessKey)),
		zap.String("webhook_url", cfg.webhook.URL), zap.String("webhook_secret", server.Mask(cfg.webhook.Secret)), zap.Any("profile", cfg.profile))
	ln, err := listener.Listen(cfg.addr)
	if err != nil {
		return fmt.Errorf("FISCAL_ADDR: %w", err)
	}
	sim := fiscalsim.New(fiscalsim.Config{EmpCodigo: cfg.empCodigo, EmpPK: cfg.empPK, AccessKey: cfg.accessKey, Logger: log,
		Webhook: cfg.webhook, Profile: cfg.profile})
	return server.Serve(ctx, log, ln, sim)
}
