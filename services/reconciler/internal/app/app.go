// Package app is the reconciler's composition root: it opens the database
// pools (its own schema, and read-only ones for ingest, invoicer and relay),
// the SQS client and the e-invoicing provider's client, and wires the
// reconciliation that serve (New, App.Run), run-once and report use.
package app

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/service"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/services/reconciler/internal/audit"
	"github.com/onceflow/onceflow/services/reconciler/internal/detect"
	"github.com/onceflow/onceflow/services/reconciler/internal/findings"
	"github.com/onceflow/onceflow/services/reconciler/internal/pspaudit"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// Schema is the PostgreSQL schema the reconciler owns.
const Schema = "reconciler"

// Spec is the reconciler binary as service.Main runs it:
//
//	serve     (default) reconcile every RECONCILER_INTERVAL while holding the
//	          reconciler lease, serving /healthz, /readyz and /metrics
//	run-once  one reconciliation, then print a summary line; for a manual run
//	report    print the open findings as a table, or JSON with --json
//	migrate   apply the reconciler schema's migrations
//	healthcheck ask a running serve's /healthz
//
// A configuration error names the variable at fault.
var Spec = service.Spec[Config, *App]{
	Name: "reconciler", Schema: Schema, New: New,
	Commands: map[string]service.Command{"run-once": runOnce, "report": report},
}

// engine is what every reconciling subcommand needs, built from the config
// by openEngine: serve (New) and run-once share it.
type engine struct {
	reg        *prometheus.Registry
	sqs        *sqs.Client
	own        *pgxpool.Pool // the reconciler schema: runs, findings, leases
	ingest     *pgxpool.Pool // read-only
	invoicer   *pgxpool.Pool // read-only
	relay      *pgxpool.Pool // read-only
	metrics    *reconcile.Metrics
	reconciler *reconcile.Reconciler
	audits     bool // some audit is on: serve runs them in a loop of their own
}

// openEngine connects everything cfg names and wires the reconciliation:
// the sweep, the detectors and, when on, the provider's and the PSPs'
// audits. On error, whatever was opened is closed again.
func openEngine(ctx context.Context, cfg Config, log *zap.Logger) (_ *engine, err error) {
	e := &engine{reg: httpserver.NewRegistry()}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if err := e.openPools(ctx, cfg); err != nil {
		return nil, err
	}
	client, err := sqsclient.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint, sqsclient.WithLogger(log.Named("sqs")))
	if err != nil {
		return nil, fmt.Errorf("sqs: %w", err)
	}
	e.sqs = client
	for _, name := range cfg.Retired() {
		log.Warn("retired setting ignored: the sweep asks ingest to announce a missing document's event again, and the relay publishes it", zap.String("variable", name))
	}
	ingestAdmin := pspaudit.NewIngestAdmin(cfg.IngestAdminURL, cfg.IngestAdminToken, httpclient.New(cfg.PSPAuditTimeout))
	ingest, invoicer := store.NewIngestReader(e.ingest), store.NewInvoicerReader(e.invoicer)
	sw := sweep.New(ingest, invoicer, ingestAdmin, sweep.Config{
		Grace: cfg.Grace, PageSize: cfg.PageSize, MaxPerRun: cfg.MaxPerRun, Overlap: cfg.SweepOverlap, FullSlice: cfg.SweepFullSlice,
	}, log.Named("sweep"), sweep.NewMetrics(e.reg))
	detector := detect.New(ingest, invoicer, store.NewRelayReader(e.relay), detect.Config{
		PendingAfter: cfg.PendingAfter, AttentionAfter: cfg.AttentionAfter, ClaimAfter: cfg.ClaimAfter,
		LeaseAfter: cfg.LeaseAfter, MaxPerKind: cfg.PageSize,
	})
	parts := reconcile.Parts{Sweep: sw, Checks: []reconcile.Checker{detector}, KeepRuns: cfg.RunsRetention}
	if cfg.AuditEnabled() {
		auditor, err := newAuditor(cfg, invoicer, store.New(e.own), audit.NewMetrics(e.reg))
		if err != nil {
			return nil, err
		}
		parts.Audits = append(parts.Audits, auditor)
	} else {
		log.Info("provider audit off: set INVOICY_BASE_URL or RECONCILER_AUDIT=on to enable it")
	}
	if cfg.PSPAuditEnabled() {
		parts.Audits = append(parts.Audits, pspaudit.New(ingestAdmin, ingest, pspaudit.Config{Window: cfg.PSPAuditWindow, Settle: cfg.PSPAuditSettle}, log.Named("psp_audit"), e.reg))
	} else {
		log.Info("PSP audit off (RECONCILER_PSP_AUDIT=off)")
	}
	own := store.New(e.own)
	e.reg.MustRegister(findings.NewGauge(own), findings.NewCasesGauge(own, ingest, invoicer))
	e.audits = len(parts.Audits) > 0
	e.metrics = reconcile.NewMetrics(e.reg, e.audits)
	e.reconciler = reconcile.New(own, parts, log.Named("reconcile"), e.metrics)
	return e, nil
}

// openPools opens the reconciler's own pool and the read-only ones; the
// error names the variable whose database failed.
func (e *engine) openPools(ctx context.Context, cfg Config) (err error) {
	if e.own, err = pg.Open(ctx, cfg.DatabaseURL); err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if e.ingest, err = pg.Open(ctx, cfg.IngestDSN(), readers...); err != nil {
		return fmt.Errorf("INGEST_DATABASE_URL: %w", err)
	}
	if e.invoicer, err = pg.Open(ctx, cfg.InvoicerDSN(), readers...); err != nil {
		return fmt.Errorf("INVOICER_DATABASE_URL: %w", err)
	}
	if e.relay, err = pg.Open(ctx, cfg.RelayDSN(), readers...); err != nil {
		return fmt.Errorf("RELAY_DATABASE_URL: %w", err)
	}
	return nil
}

// newAuditor builds the provider audit: an InvoiCy client for the branch
// the settings name, compared with the invoicer's documents read through
// invoicer, keeping what it knows of each day through own.
func newAuditor(cfg Config, invoicer *store.InvoicerReader, own *store.Store, m *audit.Metrics) (*audit.Auditor, error) {
	statuses, err := cfg.statusMap()
	if err != nil {
		return nil, fmt.Errorf("RECONCILER_PROVIDER_STATUS_MAP: %w", err)
	}
	icfg := cfg.Settings.Config()
	icfg.Timeout, icfg.StatusMap = cfg.ProviderTimeout, statuses
	client, err := invoicy.New(icfg, nil)
	if err != nil {
		return nil, fmt.Errorf("INVOICY_*: %w", err)
	}
	return audit.New(client, invoicer, own, audit.Config{
		Provider: "invoicy", Days: cfg.AuditDays, Location: fiscal.Montevideo, PageSize: cfg.PageSize,
		CurrentEvery: cfg.AuditCurrentEvery, PastEvery: cfg.AuditPastEvery, Rate: cfg.AuditRate,
	}, m), nil
}

// close closes the pools; safe on a partly opened engine.
func (e *engine) close() {
	for _, p := range []*pgxpool.Pool{e.relay, e.invoicer, e.ingest, e.own} {
		if p != nil {
			p.Close()
		}
	}
}

// checks are the readiness probes: every database answers.
func (e *engine) checks() []httpserver.Check {
	return []httpserver.Check{
		{Name: "database", Check: e.own.Ping},
		{Name: "ingest_database", Check: e.ingest.Ping},
		{Name: "invoicer_database", Check: e.invoicer.Ping},
		{Name: "relay_database", Check: e.relay.Ping},
	}
}
