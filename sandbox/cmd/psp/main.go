// Command psp runs the PSP simulators on one address: dLocal (package
// sandbox/pspsim) at the root, Stripe (sandbox/stripesim) under /stripe
// and Mercado Pago (sandbox/mpsim) under /mercadopago, so ingest's
// STRIPE_BASE_URL is http://$PSP_ADDR/stripe and MERCADOPAGO_BASE_URL
// http://$PSP_ADDR/mercadopago.
//
//	psp [serve]       serve until SIGINT/SIGTERM (default)
//	psp healthcheck   exit 0 if GET http://$PSP_ADDR/healthz answers 200, else 1
//
// Environment: LOG_LEVEL (default info), PSP_ADDR (default 127.0.0.1:8091;
// fd:N serves on a listening socket passed down as descriptor N, see pkg/listener), DLOCAL_LOGIN,
// DLOCAL_TRANS_KEY, DLOCAL_SECRET_KEY, STRIPE_API_KEY, STRIPE_WEBHOOK_SECRET,
// MERCADOPAGO_ACCESS_TOKEN, MERCADOPAGO_WEBHOOK_SECRET (sandbox defaults),
// PSP_NOTIFY_URL, STRIPE_NOTIFY_URL, MERCADOPAGO_NOTIFY_URL (where each
// sends what names no URL of its own; default none), PSP_RETRY_DELAY (Go
// duration, default 1s) and the notification faults of loadFaults
// (PSP_SEED, PSP_LOSS_RATE, ...), which all three apply, each with its own
// draws.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/pkg/listener"
	"github.com/onceflow/onceflow/sandbox/internal/server"
	"github.com/onceflow/onceflow/sandbox/mpsim"
	"github.com/onceflow/onceflow/sandbox/pspsim"
	"github.com/onceflow/onceflow/sandbox/stripesim"
)

func main() { server.Main("psp", run) }

// config is the binary's environment.
type config struct {
	addr                       string
	login, transKey, secretKey string
	stripeKey, stripeSecret    string
	mpToken, mpSecret          string
	notifyURL                  string
	stripeNotify, mpNotify     string
	retryDelay                 time.Duration
	faults                     pspsim.Faults
}

func loadConfig(getenv func(string) string) (config, error) {
	cfg := config{
		addr:         server.Env(getenv, "PSP_ADDR", "127.0.0.1:8091"),
		login:        server.Env(getenv, "DLOCAL_LOGIN", "sandbox-login"),
		transKey:     server.Env(getenv, "DLOCAL_TRANS_KEY", "sandbox-trans-key"),
		secretKey:    server.Env(getenv, "DLOCAL_SECRET_KEY", "sandbox-secret"),
		stripeKey:    server.Env(getenv, "STRIPE_API_KEY", "sk_test_sandbox"),
		stripeSecret: server.Env(getenv, "STRIPE_WEBHOOK_SECRET", "whsec_sandbox_webhook_secret"),
		mpToken:      server.Env(getenv, "MERCADOPAGO_ACCESS_TOKEN", "TEST-sandbox-access-token"),
		mpSecret:     server.Env(getenv, "MERCADOPAGO_WEBHOOK_SECRET", "sandbox-mercadopago-secret"),
		notifyURL:    getenv("PSP_NOTIFY_URL"),
		stripeNotify: getenv("STRIPE_NOTIFY_URL"),
		mpNotify:     getenv("MERCADOPAGO_NOTIFY_URL"),
	}
	if _, _, err := net.SplitHostPort(cfg.addr); err != nil && !listener.Inherited(cfg.addr) {
		return config{}, fmt.Errorf("PSP_ADDR %q: want host:port (or fd:N, a socket passed down)", cfg.addr)
	}
	for name, v := range map[string]string{"PSP_NOTIFY_URL": cfg.notifyURL, "STRIPE_NOTIFY_URL": cfg.stripeNotify, "MERCADOPAGO_NOTIFY_URL": cfg.mpNotify} {
		if u, err := url.Parse(v); v != "" && (err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https")) {
			return config{}, fmt.Errorf("%s %q: want an absolute http(s) URL", name, v)
		}
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
		zap.String("stripe_api_key", server.Mask(cfg.stripeKey)), zap.String("mercadopago_access_token", server.Mask(cfg.mpToken)),
		zap.String("notify_url", cfg.notifyURL), zap.String("stripe_notify_url", cfg.stripeNotify),
		zap.String("mercadopago_notify_url", cfg.mpNotify), zap.Duration("retry_delay", cfg.retryDelay), zap.Any("faults", cfg.faults))
	ln, err := listener.Listen(cfg.addr)
	if err != nil {
		return fmt.Errorf("PSP_ADDR: %w", err)
	}
	dl := pspsim.New(pspsim.Config{
		Login: cfg.login, TransKey: cfg.transKey, SecretKey: cfg.secretKey,
		NotifyURL: cfg.notifyURL, RetryDelay: cfg.retryDelay, Logger: log.Named("dlocal"), Faults: cfg.faults,
	})
	st := stripesim.New(stripesim.Config{APIKey: cfg.stripeKey, WebhookSecret: cfg.stripeSecret, NotifyURL: cfg.stripeNotify,
		HTTPClient: httpclient.New(10 * time.Second), Faults: reseed(cfg.faults, 1), RetryDelay: cfg.retryDelay, Logger: log.Named("stripe")})
	mp := mpsim.New(mpsim.Config{AccessToken: cfg.mpToken, WebhookSecret: cfg.mpSecret,
		HTTPClient: httpclient.New(10 * time.Second), Faults: reseed(cfg.faults, 2), RetryDelay: cfg.retryDelay, Logger: log.Named("mercadopago")})
	mp.NotifyTo(cfg.mpNotify)
	err = server.Serve(ctx, log, ln, handler(dl, st, mp))
	// after the HTTP drain: stop notification retries
	dl.Close()
	st.Close()
	mp.Close()
	return err
}

// handler serves dLocal at the root, Stripe under /stripe and Mercado Pago
// under /mercadopago.
func handler(dl, st, mp http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/stripe/", http.StripPrefix("/stripe", st))
	mux.Handle("/mercadopago/", http.StripPrefix("/mercadopago", mp))
	mux.Handle("/", dl)
	return mux
}

// reseed gives another simulator the same faults with draws of its own.
func reseed(f pspsim.Faults, n uint64) pspsim.Faults {
	f.Seed = max(f.Seed, 1) + n
	return f
}
