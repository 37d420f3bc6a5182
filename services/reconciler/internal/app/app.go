// Package app is the reconciler's composition root: it loads the
// configuration, opens the three database pools (its own schema, and
// read-only ones for ingest, invoicer and relay), the SQS client and the
// e-invoicing provider's client, wires the reconciliation, and runs the
// subcommand asked for.
package app

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/logging"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/sqsq"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/services/reconciler/internal/audit"
	"github.com/onceflow/onceflow/services/reconciler/internal/detect"
	"github.com/onceflow/onceflow/services/reconciler/internal/findings"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// Schema is the PostgreSQL schema the reconciler owns.
const Schema = "reconciler"

// Run runs the subcommand named by args[0]:
//
//	serve     (default) reconcile every RECONCILER_INTERVAL while holding the
//	          reconciler lease, serving /healthz, /readyz and /metrics
//	run-once  one reconciliation, then print a summary line; for a CronJob
//	report    print the open findings as a table, or JSON with --json
//	migrate   apply the reconciler schema's migrations
//	healthcheck ask a running serve's /healthz
//
// A configuration error names the variable at fault.
func Run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "report" {
		return report(ctx, args[1:])
	}
	return command.Run(ctx, args, map[string]command.Func{
		"serve":    serve,
		"run-once": runOnce,
		"migrate":  db.MigrateCommand(Schema),
	})
}

// runOnce runs one reconciliation without the lease: a second one running at
// the same time only sends some events twice, which the invoicer ignores.
func runOnce(ctx context.Context) error {
	d, err := open(ctx)
	if err != nil {
		return err
	}
	defer d.close()
	sum, err := d.reconciler.Once(ctx)
	if perr := d.push(ctx); perr != nil {
		d.log.Warn("push metrics", zap.Error(perr))
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(os.Stdout, sum)
	return err
}

// push sends the run's metrics to the Pushgateway at PUSHGATEWAY_URL, when
// set: a CronJob's process is gone before Prometheus could scrape it.
func (d *deps) push(ctx context.Context) error {
	if d.cfg.PushgatewayURL == "" {
		return nil
	}
	return push.New(d.cfg.PushgatewayURL, "onceflow-reconciler").Gatherer(d.reg).PushContext(ctx)
}

// deps is what every reconciling subcommand needs, built from the config.
type deps struct {
	cfg        Config
	log        *zap.Logger
	reg        *prometheus.Registry
	own        *pgxpool.Pool // the reconciler schema: runs, leases
	ingest     *pgxpool.Pool // read-only
	invoicer   *pgxpool.Pool // read-only
	relay      *pgxpool.Pool // read-only
	metrics    *reconcile.Metrics
	reconciler *reconcile.Reconciler
}

// open loads the configuration and connects everything. On error, whatever
// was opened is closed again.
func open(ctx context.Context) (_ *deps, err error) {
	loaded, err := config.Load[Config]()
	if err != nil {
		return nil, err
	}
	cfg := loaded.Value
	log, err := logging.New("reconciler", cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	log.Info("config", loaded.Fields()...)
	d := &deps{cfg: cfg, log: log, reg: httpserver.NewRegistry()}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.own, err = pg.Open(ctx, cfg.DatabaseURL); err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if d.ingest, err = pg.Open(ctx, cfg.IngestDSN(), readOnly); err != nil {
		return nil, fmt.Errorf("INGEST_DATABASE_URL: %w", err)
	}
	if d.invoicer, err = pg.Open(ctx, cfg.InvoicerDSN(), readOnly); err != nil {
		return nil, fmt.Errorf("INVOICER_DATABASE_URL: %w", err)
	}
	if d.relay, err = pg.Open(ctx, cfg.RelayDSN(), readOnly); err != nil {
		return nil, fmt.Errorf("RELAY_DATABASE_URL: %w", err)
	}
	sender, queueURL, err := billingQueue(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ingest, invoicer := store.NewIngestReader(d.ingest), store.NewInvoicerReader(d.invoicer)
	sw := sweep.New(ingest, invoicer, sender, sweep.Config{
		QueueURL: queueURL, Grace: cfg.Grace, PageSize: cfg.PageSize, MaxPerRun: cfg.MaxPerRun,
	}, log.Named("sweep"), sweep.NewMetrics(d.reg))
	d.metrics = reconcile.NewMetrics(d.reg)
	detector := detect.New(ingest, invoicer, store.NewRelayReader(d.relay), detect.Config{
		PendingAfter: cfg.PendingAfter, AttentionAfter: cfg.AttentionAfter, ClaimAfter: cfg.ClaimAfter,
		LeaseAfter: cfg.LeaseAfter, MaxPerKind: cfg.PageSize,
	})
	checks := []reconcile.Checker{detector}
	if cfg.AuditEnabled() {
		auditor, err := newAuditor(cfg, invoicer)
		if err != nil {
			return nil, err
		}
		checks = append(checks, auditor)
	} else {
		log.Info("provider audit off: set INVOICY_BASE_URL or RECONCILER_AUDIT=on to enable it")
	}
	own := store.New(d.own)
	d.reg.MustRegister(findings.NewGauge(own))
	d.reconciler = reconcile.New(own, sw, log.Named("reconcile"), d.metrics, checks...)
	return d, nil
}

// newAuditor builds the provider audit: an InvoiCy client for the branch
// the settings name, compared with the invoicer's documents read through
// invoicer.
func newAuditor(cfg Config, invoicer *store.InvoicerReader) (*audit.Auditor, error) {
	statuses, err := cfg.statusMap()
	if err != nil {
		return nil, fmt.Errorf("PROVIDER_STATUS_MAP: %w", err)
	}
	icfg := cfg.Settings.Config()
	icfg.Timeout, icfg.StatusMap = cfg.ProviderTimeout, statuses
	client, err := invoicy.New(icfg, nil)
	if err != nil {
		return nil, fmt.Errorf("INVOICY_*: %w", err)
	}
	return audit.New(client, invoicer, audit.Config{Days: cfg.AuditDays, Location: fiscal.Montevideo, PageSize: cfg.PageSize}), nil
}

// billingQueue returns the SQS client and the billing queue's URL.
func billingQueue(ctx context.Context, cfg Config) (*sqs.Client, string, error) {
	client, err := sqsq.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint)
	if err != nil {
		return nil, "", fmt.Errorf("sqs: %w", err)
	}
	url, err := sqsq.QueueURL(ctx, client, cfg.BillingQueue)
	if err != nil {
		return nil, "", fmt.Errorf("BILLING_QUEUE: %w", err)
	}
	return client, url, nil
}

// close closes the pools and flushes the log; safe on a partly opened deps.
func (d *deps) close() {
	for _, p := range []*pgxpool.Pool{d.relay, d.invoicer, d.ingest, d.own} {
		if p != nil {
			p.Close()
		}
	}
	_ = d.log.Sync()
}

// checks are the readiness probes: every database answers.
func (d *deps) checks() []httpserver.Check {
	return []httpserver.Check{
		{Name: "database", Check: d.own.Ping},
		{Name: "ingest_database", Check: d.ingest.Ping},
		{Name: "invoicer_database", Check: d.invoicer.Ping},
		{Name: "relay_database", Check: d.relay.Ping},
	}
}
