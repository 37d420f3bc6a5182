// Package app is the invoicer's composition root: it reads the
// configuration, opens the pool and the SQS client, and runs the billing and
// provider-event consumers, the emission loop and the operator API until the
// context ends.
package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/logging"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/sqsq"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/provider/keyed"
	"github.com/onceflow/onceflow/services/invoicer/internal/admin"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/emit"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Run runs the subcommand in args: serve (default), migrate or healthcheck.
func Run(ctx context.Context, args []string) error {
	return command.Run(ctx, args, map[string]command.Func{
		"serve": func(ctx context.Context) error {
			loaded, err := config.Load[Config]()
			if err != nil {
				return err
			}
			return Serve(ctx, loaded, nil)
		},
		"migrate": db.MigrateCommand("invoicer"),
	})
}

// Serve runs the invoicer until ctx ends. When listening is non-nil it
// receives the bound HTTP address (tests use port 0).
func Serve(ctx context.Context, loaded config.Loaded[Config], listening chan<- string) error {
	cfg := loaded.Value
	log, err := logging.New("invoicer", cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	log.Info("config", loaded.Fields()...)
	stopTracing, err := tracing.Setup(ctx, "invoicer")
	if err != nil {
		return err
	}
	defer func() { _ = stopTracing(context.WithoutCancel(ctx)) }()
	prov, err := newProvider(cfg)
	if err != nil {
		return err
	}
	pool, err := pg.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := httpserver.NewRegistry()
	srv := httpserver.New(log, cfg.HTTPAddr, reg, httpserver.Check{Name: "postgres", Check: pool.Ping})
	group := worker.NewGroup(log, worker.Config{StallAfter: cfg.StallTimeout, ShutdownTimeout: cfg.ShutdownTimeout})
	srv.SetLiveness(group)
	srv.Profiling(cfg.AdminToken)
	waker := outbox.NewWaker(pool, notify.Table, outbox.WakeEvery)
	st := store.New(pool)
	reg.MustRegister(newDocumentCollector(st, log.Named("metrics")))
	ecfg := emitConfig(cfg)
	ecfg.Wake = waker.Wake
	emitter := emit.New(st, prov.Provider, log.Named("emit"), reg, ecfg)
	receivers, err := newReceivers(ctx, cfg, st, prov, log, reg, waker.Wake, emitter.Due)
	if err != nil {
		return err
	}
	var lookup admin.Lookup
	if cfg.ProviderMode == ModeLookup {
		lookup = prov.Lookup
	}
	admin.Register(srv.Echo(), cfg.AdminToken, st, lookup, log.Named("admin"), waker.Wake)
	loops := append(receivers, waker.Run)
	for range cfg.EmitWorkers {
		loops = append(loops, emitter.Run)
	}
	if err := srv.Listen(); err != nil {
		return err
	}
	if listening != nil {
		listening <- srv.Addr()
	}
	group.Add(loops...)
	return group.Run(ctx, srv)
}

// provider is the configured adapter with what the loop and consumers need
// from it.
type provider struct {
	emit.Provider
	statuses map[string]fiscal.Status
}

// holder is the provider whose events the invoicer applies, confirmed by
// a look-up unless PROVIDER_MODE is blind.
func (p provider) holder(cfg Config) consumer.Holder {
	h := consumer.Holder{Name: cfg.Provider, Lookup: p.Lookup}
	if cfg.ProviderMode == ModeBlind {
		h.Lookup = nil
	}
	return h
}

// newProvider builds the adapter PROVIDER names.
func newProvider(cfg Config) (provider, error) {
	statuses, err := cfg.statusMap()
	if err != nil {
		return provider{}, err
	}
	if cfg.Provider == ProviderKeyed {
		c, err := keyed.New(keyed.Config{BaseURL: cfg.KeyedBaseURL, Token: cfg.KeyedToken, Timeout: cfg.ProviderTimeout,
			RatePerSecond: cfg.ProviderRate, Burst: cfg.ProviderBurst, StatusMap: statuses})
		return provider{Provider: c, statuses: statuses}, err
	}
	c, err := invoicy.New(invoicy.Config{BaseURL: cfg.InvoiCyBaseURL, EmpCodigo: cfg.InvoiCyEmpCodigo, EmpPK: cfg.InvoiCyEmpPK,
		AccessKey: cfg.InvoiCyAccessKey, Timeout: cfg.ProviderTimeout, StatusMap: statuses,
		RatePerSecond: cfg.ProviderRate, Burst: cfg.ProviderBurst}, httpclient.New(0))
	return provider{Provider: c, statuses: statuses}, err
}

// newReceivers returns CONSUMERS receivers for each of the two queues.
func newReceivers(ctx context.Context, cfg Config, st *store.Store, prov provider, log *zap.Logger, reg prometheus.Registerer, wake, due func()) ([]worker.Loop, error) {
	client, err := sqsq.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint)
	if err != nil {
		return nil, err
	}
	billingURL, err := sqsq.QueueURL(ctx, client, cfg.BillingQueue)
	if err != nil {
		return nil, err
	}
	providerURL, err := sqsq.QueueURL(ctx, client, cfg.ProviderQueue)
	if err != nil {
		return nil, err
	}
	counter := consumer.NewCounter(reg)
	opts := consumer.Options{Wait: cfg.ConsumerWait, Visibility: cfg.ConsumerVisibility}
	billing := consumer.NewReceiver(client, billingURL, "billing", consumer.NewBilling(st, log.Named("billing"), due).Handle,
		log.Named("billing"), counter, opts)
	events := consumer.NewReceiver(client, providerURL, "provider", consumer.Each(consumer.NewProvider(st, prov.statuses, prov.holder(cfg), log.Named("provider"), wake).Handle),
		log.Named("provider"), counter, opts)
	var loops []worker.Loop
	for range cfg.Consumers {
		loops = append(loops, billing.Run, events.Run)
	}
	return loops, nil
}

// emitConfig is the emission loop's part of cfg; Validate has checked it.
func emitConfig(cfg Config) emit.Config {
	summary, _ := cfg.summary()
	return emit.Config{
		Batch: cfg.EmitBatch, Lease: cfg.EmitLease, CallTimeout: cfg.ProviderTimeout, Poll: cfg.EmitPoll, Settle: cfg.EmitSettle,
		Retry:   backoff.Policy{Base: cfg.EmitRetryBase, Cap: cfg.EmitRetryCap},
		DGIPoll: backoff.Policy{Base: cfg.DGIPollBase, Cap: cfg.DGIPollCap},
		Summary: summary, CreditNoteWait: cfg.CreditNoteWait, Blind: cfg.ProviderMode == ModeBlind,
	}
}
