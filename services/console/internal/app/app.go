// Package app is the console's composition root: New reads the users
// file, sets up sessions and OIDC, the admin API and SQS clients and the
// pages; Run serves them until its context ends.
package app

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/services/console/internal/adminapi"
	"github.com/onceflow/onceflow/services/console/internal/auth"
	"github.com/onceflow/onceflow/services/console/internal/queues"
	"github.com/onceflow/onceflow/services/console/internal/web"
)

// Spec is the console binary as service.Main runs it: serve (the default),
// healthcheck, and hash-password for the users file. It has no database:
// its migrate does nothing, so deploy scripts may call it like the others'.
var Spec = service.Spec[Config, *App]{Name: "console", New: New,
	Commands: map[string]service.Command{"hash-password": hashPassword, "migrate": noMigrations}}

func noMigrations(_ context.Context, _ config.Getenv, _ []string, stdout io.Writer) error {
	_, err := fmt.Fprintln(stdout, "console: no database, nothing to migrate")
	return err
}

// App is the console, listening.
type App struct {
	log   *zap.Logger
	srv   *httpserver.Server
	group *worker.Group
}

// New builds the console and binds its listener (HTTP_ADDR; port 0 picks
// one, see Addr). Errors name what could not start: the users file, the
// OIDC issuer, the SQS client, the listener.
func New(ctx context.Context, cfg Config, log *zap.Logger) (*App, error) {
	sessions, err := newSessions(cfg, log)
	if err != nil {
		return nil, err
	}
	users, err := readUsers(cfg.UsersFile)
	if err != nil {
		return nil, err
	}
	var oidc *auth.OIDC
	if cfg.OIDCIssuer != "" {
		oidc, err = auth.NewOIDC(ctx, auth.OIDCConfig{Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID, ClientSecret: cfg.OIDCClientSecret,
			RedirectURL: cfg.OIDCRedirectURL, Operators: cfg.Operators()}, !cfg.InsecureCookies)
		if err != nil {
			return nil, fmt.Errorf("CONSOLE_OIDC_ISSUER: %w", err)
		}
	}
	client, err := sqsclient.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint, sqsclient.WithLogger(log.Named("sqs")))
	if err != nil {
		return nil, err
	}
	api := adminapi.New(adminapi.Services{Ingest: cfg.IngestAdminURL, Relay: cfg.RelayAdminURL, Invoicer: cfg.InvoicerAdminURL,
		Reconciler: cfg.ReconcilerAdminURL}, cfg.AdminToken, cfg.AdminTimeout)
	h, err := web.New(api, queues.New(client, cfg.QueueNames()), sessions, users, oidc, log.Named("web"),
		web.Options{Refresh: cfg.Refresh, TraceURL: cfg.TraceURL, SecureCookies: !cfg.InsecureCookies})
	if err != nil {
		return nil, err
	}
	srv := httpserver.New(log.Named("http"), httpserver.Addrs{Public: cfg.HTTPAddr, Admin: cfg.AdminAddr}, httpserver.NewRegistry())
	h.Register(srv.Echo())
	group := worker.NewGroup(log, worker.Config{StallAfter: cfg.StallTimeout, ShutdownTimeout: cfg.ShutdownTimeout})
	srv.SetLiveness(group)
	if err := srv.Listen(); err != nil {
		return nil, err
	}
	log.Info("console ready", zap.String("addr", srv.Addr()), zap.Bool("users_file", users != nil), zap.Bool("oidc", oidc != nil))
	return &App{log: log, srv: srv, group: group}, nil
}

// Addr is the bound HTTP address.
func (a *App) Addr() string { return a.srv.Addr() }

// Run serves until ctx ends, then stops within SHUTDOWN_TIMEOUT.
func (a *App) Run(ctx context.Context) error {
	err := a.group.Run(ctx, a.srv)
	a.log.Info("stopped")
	return err
}

func newSessions(cfg Config, log *zap.Logger) (*auth.Sessions, error) {
	key := []byte(cfg.SessionKey)
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
		log.Warn("CONSOLE_SESSION_KEY is unset: a random key signs sessions, so a restart signs everyone out and replicas do not share sessions")
	}
	s, err := auth.NewSessions(key, cfg.SessionTTL, !cfg.InsecureCookies)
	if err != nil {
		return nil, fmt.Errorf("CONSOLE_SESSION_KEY: %w", err)
	}
	return s, nil
}

// readUsers reads CONSOLE_USERS_FILE; nil when it is unset.
func readUsers(path string) (*auth.Users, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CONSOLE_USERS_FILE: %w", err)
	}
	defer f.Close()
	u, err := auth.ParseUsers(f)
	if err != nil {
		return nil, fmt.Errorf("CONSOLE_USERS_FILE %s: %w", path, err)
	}
	return u, nil
}

// hashPassword prints the bcrypt hash of the password read from stdin's
// first line, for a users file line.
func hashPassword(_ context.Context, _ config.Getenv, _ []string, stdout io.Writer) error {
	line, err := readLine(os.Stdin)
	if err != nil || line == "" {
		return fmt.Errorf("hash-password: want the password on stdin")
	}
	h, err := auth.Hash(line)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, h)
	return err
}

func readLine(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 1024))
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimRight(first, "\r"), err
}
