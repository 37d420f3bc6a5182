// Command psp runs the dLocal simulator (package sandbox/pspsim).
//
//	psp [serve]       serve until SIGINT/SIGTERM (default)
//	psp healthcheck   exit 0 if GET http://$PSP_ADDR/healthz answers 200, else 1
//
// Environment: LOG_LEVEL (default info), PSP_ADDR (default 127.0.0.1:8091;
// fd:N serves on a listening socket passed down as descriptor N, see pkg/listener), DLOCAL_LOGIN,
// DLOCAL_TRANS_KEY, DLOCAL_SECRET_KEY (sandbox defaults), PSP_NOTIFY_URL
// (default none), PSP_RETRY_DELAY (Go duration, default 1s) and the
// notification faults of loadFaults (PSP_SEED, PSP_LOSS_RATE, ...).
package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/listener"
	"github.com/onceflow/onceflow/sandbox/internal/server"
	"github.com/onceflow/onceflow/sandbox/pspsim"
)

func main() { server.Main("psp", run) }

// config is the binary's environment.
type config struct {
	addr                       string
	login, transKey, secretKey string
	notifyURL                  string
	retryDelay                 time.Duration
	faults                     pspsim.Faults
}

func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		addr:      server.Env(getenv, "PSP_ADDR", "127.0.0.1:8091"),
		login:     server.Env(getenv, "DLOCAL_LOGIN", "sandbox-login"),
		transKey:  server.Env(getenv, "DLOCAL_TRANS_KEY", "sandbox-trans-key"),
		secretKey: server.Env(getenv, "DLOCAL_SECRET_KEY", "sandbox-secret"),
		notifyURL: getenv("PSP_NOTIFY_URL"),
	}
	if _, _, err := net.SplitHostPort(cfg.addr); err != nil && !listener.Inherited(cfg.addr) {
		return config{}, fmt.Errorf("PSP_ADDR %q: want host:port (or fd:N, a socket passed down)", cfg.addr)
	}
	if u, err := url.Parse(cfg.notifyURL); cfg.notifyURL != "" && (err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https")) {
		return config{}, fmt.Errorf("PSP_NOTIFY_URL %q: want an absolute http(s) URL", cfg.notifyURL)
	}
	delay, err := time.ParseDuration(server.Env(getenv, "PSP_RETRY_DELAY", "1s"))
	if err != nil || delay <= 0 {
		return config{}, fmt.Errorf("PSP_RETRY_DELAY %q: want a positive Go duration such as 1s", getenv("PSP_RETRY_DELAY"))
	}
	cfg.retryDelay = delay
	if cfg.faults, err = loadFaults(getenv); err != nil {
		return config{}, err
	}
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
	log.Info("config", zap.String("addr", cfg.addr), zap.String("login", cfg.login),
		zap.String("trans_key", server.Mask(cfg.transKey)), zap.String("secret_key", server.Mask(cfg.secretKey)),
		zap.String("notify_url", cfg.notifyURL), zap.Duration("retry_delay", cfg.retryDelay), zap.Any("faults", cfg.faults))
	ln, err := listener.Listen(cfg.addr)
	if err != nil {
		return fmt.Errorf("PSP_ADDR: %w", err)
	}
	sim := pspsim.New(pspsim.Config{
		Login: cfg.login, TransKey: cfg.transKey, SecretKey: cfg.secretKey,
		NotifyURL: cfg.notifyURL, RetryDelay: cfg.retryDelay, Logger: log, Faults: cfg.faults,
	})
	err = server.Serve(ctx, log, ln, sim)
	sim.Close() // after the HTTP drain: stop notification retries
	return err
}
