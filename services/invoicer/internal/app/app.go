// Package app is the invoicer's composition root: New opens the pool and
// the SQS client and builds the billing and provider-event consumers, the
// emission loop and the operator API; Run runs them until the context ends.
package app

import (
	"context"
	"fmt"
	"github.com/labstack/echo/v4"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/api/openapi"
	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/provider/keyedjson"
	"github.com/onceflow/onceflow/provider/rates"
	"github.com/onceflow/onceflow/provider/rates/bcu"
	"github.com/onceflow/onceflow/services/invoicer/internal/admin"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/retention"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Spec is the invoicer binary: serve, migrate (the invoicer schema) and
// healthcheck.
var Spec = service.Spec[Config, *App]{Name: "invoicer", Schema: "invoicer", New: New}

// App is a built invoicer: its pool, its HTTP server (bound) and its loops.
type App struct {
	pool  *pgxpool.Pool
	srv   *httpserver.Server
	group *worker.Group
}

// New builds the invoicer from cfg: the provider adapter, the pool, the two
// queues' consumers, the emission workers and the HTTP server with the
// operator API, bound to HTTP_ADDR. Errors come from the adapter's
// settings, the database, SQS (a queue that cannot be resolved) or the
// listener; New then closes what it opened.
func New(ctx context.Context, cfg Config, log *zap.Logger) (*App, error) {
	prov, err := newProvider(cfg)
	if err != nil {
		return nil, err
	}
	pool, err := pg.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	a, err := build(ctx, cfg, pool, prov, log)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return a, nil
}

// build wires the server and the loops over pool and binds the listener.
func build(ctx context.Context, cfg Config, pool *pgxpool.Pool, prov provider, log *zap.Logger) (a *App, err error) {
	reg := httpserver.NewRegistry()
	srv := httpserver.New(log, httpserver.Addrs{Public: cfg.HTTPAddr, Admin: cfg.AdminAddr}, reg, httpserver.Check{Name: "postgres", Check: pool.Ping})
	group := worker.NewGroup(log, worker.Config{StallAfter: cfg.StallTimeout, ShutdownTimeout: cfg.ShutdownTimeout})
	srv.SetLiveness(group)
	waker := outbox.NewWaker(pool, notify.Table, outbox.WakeEvery)
	st := store.New(pool)
	reg.MustRegister(newDocumentCollector(st, log.Named("metrics"), cfg.MetricsEvery), newCaseCollector(st, log.Named("metrics")))
	ecfg := emitConfig(cfg)
	ecfg.Handoff = store.NewHandoff(ecfg.Lease, ecfg.Batch*max(ecfg.Workers, 1))
	st.UseHandoff(ecfg.Handoff)
	if ecfg.Rates, err = rateSource(ctx, cfg, st); err != nil {
		return nil, err
	}
	ecfg.Wake = waker.Wake
	ecfg.Valid = notify.NewValid(reg, nil)
	emitter := emit.New(st, prov.Provider, log.Named("emit"), reg, ecfg)
	receivers, err := newReceivers(ctx, cfg, st, prov, log, reg, ecfg.Valid, waker.Wake, emitter.Due)
	if err != nil {
		return nil, err
	}
	adminGroup := srv.Admin(cfg.AdminToken)
	admin.New(st, prov.lookup(cfg), log.Named("admin"), waker.Wake).WithValid(ecfg.Valid).Register(adminGroup)
	openapi.Serve(adminGroup, "invoicer")
	group.Add(receivers...)
	group.Add(waker.Run)
	group.Add(retention.NewPruner(st, log.Named("retention"), reg, retention.Config{
		Retention: cfg.AttemptsRetention, Interval: cfg.AttemptsPruneInterval, Batch: cfg.AttemptsPruneBatch,
	}).Run)
	group.Add(emitter.Run)
	if err := srv.Listen(); err != nil {
		return nil, err
	}
	return &App{pool: pool, srv: srv, group: group}, nil
}

// Addr is the bound HTTP address (HTTP_ADDR, with the port chosen when it
// asked for :0).
func (a *App) Addr() string { return a.srv.Addr() }

// Routes returns the routes both ports serve (for the test that holds
// them to the OpenAPI document).
func (a *App) Routes() []*echo.Route { return a.srv.Routes() }

// AdminAddr is the bound admin address (ADMIN_ADDR: /admin, /metrics,
// /debug/pprof), with the port chosen when it asked for :0.
func (a *App) AdminAddr() string { return a.srv.AdminAddr() }

// Run serves and runs the loops until ctx ends, stops them in two phases
// (worker.Group.Run), then closes the pool. The error is the failure that
// ended the run, if any.
func (a *App) Run(ctx context.Context) error {
	defer a.pool.Close()
	return a.group.Run(ctx, a.srv)
}

// provider is the configured adapter with what the loop and consumers need
// from it.
type provider struct {
	emit.Provider
	statuses map[string]fiscal.Status
}

// lookup is the adapter's look-up for the operator API, or nil in blind
// mode, where adopt is refused.
func (p provider) lookup(cfg Config) admin.Lookup {
	if cfg.ProviderMode != ModeLookup {
		return nil
	}
	return p.Lookup
}

// holder is the provider whose events the invoicer applies, confirmed by
// a look-up unless INVOICER_PROVIDER_MODE is blind.
func (p provider) holder(cfg Config) consumer.Holder {
	h := consumer.Holder{Name: cfg.Provider, Lookup: p.Lookup}
	if cfg.ProviderMode == ModeBlind {
		h.Lookup = nil
	}
	return h
}

// newProvider builds the adapter INVOICER_PROVIDER names.
func newProvider(cfg Config) (provider, error) {
	statuses, err := cfg.statusMap()
	if err != nil {
		return provider{}, err
	}
	if cfg.Provider == ProviderKeyed {
		c, err := keyedjson.New(keyedjson.Config{BaseURL: cfg.KeyedBaseURL, Token: cfg.KeyedToken, Timeout: cfg.ProviderTimeout,
			RatePerSecond: cfg.ProviderRate, Burst: cfg.ProviderBurst, StatusMap: statuses})
		return provider{Provider: c, statuses: statuses}, err
	}
	icfg := cfg.Settings.Config()
	icfg.Timeout, icfg.StatusMap, icfg.RatePerSecond, icfg.Burst = cfg.ProviderTimeout, statuses, cfg.ProviderRate, cfg.ProviderBurst
	c, err := invoicy.New(icfg, httpclient.New(0))
	return provider{Provider: c, statuses: statuses}, err
}

// rateSource is the emission loop's source of exchange rates and UI
// values: invoicer.rates, loaded from INVOICER_RATES_FILE when set, then
// BCU unless INVOICER_BCU_URL is off; what it answers is kept for
// INVOICER_RATES_CACHE_TTL.
func rateSource(ctx context.Context, cfg Config, st *store.Store) (rates.Source, error) {
	if cfg.RatesFile != "" {
		m, err := rates.LoadFile(cfg.RatesFile)
		if err != nil {
			return nil, fmt.Errorf("INVOICER_RATES_FILE: %w", err)
		}
		var saveErr error
		m.Each(func(code string, day time.Time, v *big.Rat) {
			if saveErr == nil {
				saveErr = st.SaveRate(ctx, code, day, v, "file", true)
			}
		})
		if saveErr != nil {
			return nil, saveErr
		}
	}
	src := store.Rates{Store: st}
	if cfg.BCUURL != "off" {
		src.Upstream, src.Name = bcu.New(cfg.BCUURL, httpclient.New(cfg.ProviderTimeout)), "bcu"
	}
	if cfg.RatesCacheTTL > 0 {
		return rates.NewCached(src, cfg.RatesCacheTTL), nil
	}
	return src, nil
}

// newReceivers returns INVOICER_CONSUMERS receivers for each of the two queues.
func newReceivers(ctx context.Context, cfg Config, st *store.Store, prov provider, log *zap.Logger, reg prometheus.Registerer, valid *notify.Valid, wake, due func()) ([]worker.Loop, error) {
	client, err := sqsclient.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint, sqsclient.WithLogger(log.Named("sqs")))
	if err != nil {
		return nil, err
	}
	billingURL, err := sqsclient.QueueURL(ctx, client, cfg.BillingQueue)
	if err != nil {
		return nil, err
	}
	providerURL, err := sqsclient.QueueURL(ctx, client, cfg.ProviderQueue)
	if err != nil {
		return nil, err
	}
	counter := consumer.NewCounter(reg)
	untrusted := msgauth.NewUntrustedCounter(reg, "onceflow_invoicer_untrusted_messages_total", "billing", "provider")
	options := func(q msgauth.Setting) consumer.Options {
		return consumer.Options{Wait: cfg.ConsumerWait, Visibility: cfg.ConsumerVisibility, Trust: q.Trust(untrusted, log)}
	}
	billingTrust, providerTrust := cfg.trusts()
	billing := consumer.NewReceiver(client, billingURL, "billing", consumer.NewBilling(st, log.Named("billing"), due).Handle,
		log.Named("billing"), counter, options(billingTrust))
	events := consumer.NewReceiver(client, providerURL, "provider", consumer.Each(consumer.NewProvider(st, prov.statuses, prov.holder(cfg), log.Named("provider"), wake).WithValid(valid).Handle),
		log.Named("provider"), counter, options(providerTrust))
	var loops []worker.Loop
	for range cfg.Consumers {
		loops = append(loops, billing.Run, events.Run)
	}
	return loops, nil
}

// emitConfig is the emission loop's part of cfg; Validate has checked it.
func emitConfig(cfg Config) emit.Config {
	summary, _ := cfg.summary()
	schedule, _ := vat.ParseSchedule(cfg.VATRates)
	return emit.Config{VAT: schedule,
		Batch: cfg.EmitBatch, Workers: cfg.EmitWorkers, Sends: cfg.EmitSends(), Lease: cfg.EmitLease, CallTimeout: cfg.ProviderTimeout, Poll: cfg.EmitPoll, Linger: cfg.EmitLinger, Settle: cfg.EmitSettle,
		Retry:   backoff.Policy{Base: cfg.EmitRetryBase, Cap: cfg.EmitRetryCap},
		DGIPoll: backoff.Policy{Base: cfg.DGIPollBase, Cap: cfg.DGIPollCap},
		Summary: summary, CreditNoteWait: cfg.CreditNoteWait, RefusedCaseAfter: cfg.RefusedCaseAfter, Blind: cfg.ProviderMode == ModeBlind,
	}
}
