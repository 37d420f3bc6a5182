// Package app is ingest's composition root: from its configuration it opens
// the pool, builds the webhook receiver, the APIs, the apply workers, the
// status poller and the pruner, and runs them until the context ends.
package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
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
	"github.com/onceflow/onceflow/services/ingest/internal/admin"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/housekeeping"
	"github.com/onceflow/onceflow/services/ingest/internal/httpapi"
	"github.com/onceflow/onceflow/services/ingest/internal/merchanthook"
	"github.com/onceflow/onceflow/services/ingest/internal/notices"
	"github.com/onceflow/onceflow/services/ingest/internal/poller"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/psp/dlocal"
	"github.com/onceflow/onceflow/services/ingest/internal/psp/mercadopago"
	"github.com/onceflow/onceflow/services/ingest/internal/psp/stripe"
	"github.com/onceflow/onceflow/services/ingest/internal/pspadmin"
	"github.com/onceflow/onceflow/services/ingest/internal/pspcalls"
	"github.com/onceflow/onceflow/services/ingest/internal/sources"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// Spec is ingest for service.Main: serve builds it with New.
var Spec = service.Spec[Config, *App]{Name: "ingest", Schema: "ingest", New: New}

// App is ingest built and listening: Run serves it and runs its loops.
type App struct {
	pool  *pgxpool.Pool
	srv   *httpserver.Server
	group *worker.Group
}

// New reads the webhook sources, opens the pool, builds the HTTP server and
// the loops, and binds the listener. An error names the setting at fault
// (the sources file, the TLS files, the address) or the database; whatever
// New opened is closed again.
func New(ctx context.Context, cfg Config, log *zap.Logger) (*App, error) {
	srcs, err := sources.FromEnv(cfg.SourcesFile, cfg.Getenv)
	if err != nil {
		return nil, err
	}
	scopes, err := sources.PSPScopes(srcs)
	if err != nil {
		return nil, err
	}
	creditNote, err := sources.ChargebackCreditNote(srcs)
	if err != nil {
		return nil, err
	}
	if err := cfg.ValidatePSPs(scopes); err != nil {
		return nil, err
	}
	byScope, err := pspsByScope(cfg, scopes)
	if err != nil {
		return nil, err
	}
	pool, err := pg.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	a := &App{pool: pool}
	if err := a.build(ctx, cfg, srcs, psps{byScope: byScope, creditNote: creditNote}, log); err != nil {
		pool.Close()
		return nil, err
	}
	return a, nil
}

// pspCallsEvery is how often the PSP calls recorded for the console's trace
// are written, all of them in one statement: how late the trace may show one.
const pspCallsEvery = 100 * time.Millisecond

// handoffBatches is how many batches of each apply worker the receipts
// handed to them in memory may fill (store.Handoff): a burst beyond that
// waits in the table, to be claimed from there.
const handoffBatches = 4

// build makes the server and the loops and binds the listener.
func (a *App) build(ctx context.Context, cfg Config, srcs []webhook.Source, p psps, log *zap.Logger) error {
	reg := httpserver.NewRegistry()
	st := store.New(a.pool)
	st.SetPollAfter(cfg.PollAfter)
	handoff := store.NewHandoff(cfg.ApplyLease, handoffBatches*cfg.ApplyBatch*max(cfg.Workers, 1))
	st.UseHandoff(handoff)
	calls := pspcalls.NewBatcher(st, log.Named("pspcalls"), pspCallsEvery)
	for scope, ad := range p.byScope {
		p.byScope[scope] = pspcalls.Wrap(ad, calls, log.Named("pspcalls"))
	}
	reg.MustRegister(housekeeping.NewBacklog(st), housekeeping.NewCases(st))
	a.srv = httpserver.New(log, httpserver.Addrs{Public: cfg.HTTPAddr, Admin: cfg.AdminAddr}, reg, httpserver.Check{Name: "postgres", Check: a.pool.Ping})
	a.group = worker.NewGroup(log, worker.Config{StallAfter: cfg.StallTimeout, ShutdownTimeout: cfg.ShutdownTimeout})
	a.srv.SetLiveness(a.group)
	if cfg.TLSCertFile != "" {
		if err := a.srv.UseTLS(cfg.TLSCertFile, cfg.TLSKeyFile); err != nil {
			return err
		}
	}
	wake := make(chan struct{}, 1)
	webhook.NewHandler(srcs, st, log.Named("webhook"), reg, wake, webhook.Intake{MaxInFlight: cfg.WebhookMaxInFlight, Wait: cfg.WebhookAdmissionWait}).Register(a.srv.Echo())
	httpapi.New(st, cfg.APIToken).Register(a.srv.Echo())
	if err := openapi.ServePublic(a.srv.Echo(), "ingest"); err != nil {
		return err
	}
	g := a.srv.Admin(cfg.AdminToken)
	admin.New(st, log.Named("admin"), wake).Register(g)
	pspadmin.New(st, p.byScope, log.Named("pspadmin"), wake).Register(g)
	openapi.Serve(g, "ingest")
	a.group.Add(calls.Run)
	a.group.Add(loops(cfg, a.pool, st, handoff, p, log, reg, wake)...)
	deliveries := make(chan struct{}, 1)
	admin.NewDeliveries(st, log.Named("admin"), deliveries).Register(g)
	notifying, err := notifications(ctx, cfg, st, log, reg, deliveries)
	if err != nil {
		return err
	}
	a.group.Add(notifying...)
	return a.srv.Listen()
}

// notifications are the receiver of the notifications queue and, when a
// merchant webhook is configured, its deliverer (docs/notifications.md);
// none when INGEST_CONSUME_NOTIFICATIONS is false.
func notifications(ctx context.Context, cfg Config, st *store.Store, log *zap.Logger, reg prometheus.Registerer, wake chan struct{}) ([]worker.Loop, error) {
	if !cfg.ConsumeNotifications {
		return nil, nil
	}
	client, err := sqsclient.NewClient(ctx, cfg.AWSRegion, cfg.SQSEndpoint, sqsclient.WithLogger(log.Named("sqs")))
	if err != nil {
		return nil, err
	}
	send := cfg.MerchantWebhookURL != ""
	nudge := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	rec := notices.NewRecorder(st, log.Named("notices"), send, nudge)
	loops := []worker.Loop{notices.NewReceiver(client, cfg.NotificationsQueue, rec, log.Named("notices"), reg, cfg.NotificationsWait,
		cfg.notificationsTrust().Trust(msgauth.NewUntrustedCounter(reg, "onceflow_ingest_untrusted_messages_total", notices.Queue), log.Named("notices"))).Run}
	if !send {
		return loops, nil
	}
	d, err := merchanthook.New(st, log.Named("merchanthook"), reg, merchanthook.Config{
		URL: cfg.MerchantWebhookURL, Secret: cfg.MerchantWebhookSecret, Timeout: cfg.MerchantWebhookTimeout,
		// A round claims four POSTs per slot, so its last ones may start
		// after four timeouts: the lease outlasts five, plus the saves.
		Batch: 4 * cfg.MerchantWebhookParallel, Parallel: cfg.MerchantWebhookParallel, Lease: 5*cfg.MerchantWebhookTimeout + 10*time.Second,
		Poll: cfg.MerchantWebhookPoll, MaxAttempts: cfg.MerchantWebhookMaxAttempts,
		Backoff: backoff.Policy{Base: cfg.MerchantWebhookBackoffBase, Cap: cfg.MerchantWebhookBackoffCap},
	}, wake)
	if err != nil {
		return nil, err
	}
	return append(loops, d.Run), nil
}

// Addr is the bound HTTP address (host:port; useful with port 0).
func (a *App) Addr() string { return a.srv.Addr() }

// Routes returns the routes both ports serve (for the test that holds
// them to the OpenAPI document).
func (a *App) Routes() []*echo.Route { return a.srv.Routes() }

// AdminAddr is the bound admin address (ADMIN_ADDR: /admin, /metrics,
// /debug/pprof), with the port chosen when it asked for :0.
func (a *App) AdminAddr() string { return a.srv.AdminAddr() }

// Run serves and runs the loops until ctx ends, stops in two phases
// (worker.Group.Run), then closes the pool. The error is what ended the run
// early, if anything, or the HTTP server's shutdown error.
func (a *App) Run(ctx context.Context) error {
	defer a.pool.Close()
	return a.group.Run(ctx, a.srv)
}

// loops are the apply workers, the outbox waker, the status poller (when a
// source is a PSP) and the pruner.
func loops(cfg Config, pool *pgxpool.Pool, st *store.Store, handoff *store.Handoff, p psps, log *zap.Logger, reg prometheus.Registerer, wake chan struct{}) []worker.Loop {
	waker := outbox.NewWaker(pool, store.Outbox, outbox.WakeEvery)
	all := []worker.Loop{applier(cfg, st, handoff, p, log, reg, wake, waker.Wake), waker.Run}
	if len(p.byScope) > 0 {
		all = append(all, poller.New(st, pollTargets(p.byScope), log.Named("poller"), reg, poller.Config{
			After: cfg.PollAfter, Every: cfg.PollEvery, EveryMax: cfg.PollEveryMax, GiveUp: cfg.PollGiveUp, PaidGiveUp: cfg.PollPaidGiveUp,
			RecurringEvery: cfg.PollRecurringEvery, RecurringGiveUp: cfg.PollRecurringGiveUp,
			Interval: cfg.PollInterval, Batch: cfg.PollBatch, Concurrency: cfg.PollConcurrency, RoundTimeout: cfg.PollRoundTimeout,
		}, wake).Run)
	}
	return append(all, housekeeping.NewPruner(st, log.Named("prune"), reg, housekeeping.Config{
		ReceiptRetention: cfg.ReceiptRetention, IdempotencyRetention: cfg.IdempotencyRetention, NotificationRetention: cfg.NotificationRetention,
		Interval: cfg.PruneInterval, Batch: cfg.PruneBatch,
	}).Run)
}

// psps are the PSP adapters by dedupe scope, and the scopes whose
// chargebacks are credited automatically.
type psps struct {
	byScope    map[string]psp.Adapter
	creditNote map[string]bool
}

// pspsByScope builds the adapter of each PSP the sources name, keyed by the
// dedupe scope of its sources.
func pspsByScope(cfg Config, scopes map[string]string) (map[string]psp.Adapter, error) {
	hc := httpclient.New(cfg.PSPTimeout)
	out := map[string]psp.Adapter{}
	for name, scope := range scopes {
		switch name {
		case dlocal.Name:
			out[scope] = dlocal.New(dlocal.Config{BaseURL: cfg.DLocalBaseURL, Login: cfg.DLocalLogin,
				TransKey: cfg.DLocalTransKey, SecretKey: cfg.DLocalSecretKey}, hc)
		case stripe.Name:
			out[scope] = stripe.New(stripe.Config{APIKey: cfg.StripeAPIKey, BaseURL: cfg.StripeBaseURL}, hc)
		case mercadopago.Name:
			mp, err := mercadopago.New(mercadopago.Config{AccessToken: cfg.MercadoPagoAccessToken, BaseURL: cfg.MercadoPagoBaseURL}, hc)
			if err != nil {
				return nil, fmt.Errorf("MERCADOPAGO_BASE_URL: %w", err)
			}
			out[scope] = mp
		}
	}
	return out, nil
}

// pollTargets lists the adapters with their scopes, in scope order.
func pollTargets(psps map[string]psp.Adapter) []poller.Target {
	var out []poller.Target
	for _, scope := range slices.Sorted(maps.Keys(psps)) {
		out = append(out, poller.Target{Scope: scope, PSP: psps[scope]})
	}
	return out
}

// applier returns the apply loop: one claimer, cfg.Workers batches worked
// at once.
func applier(cfg Config, st *store.Store, handoff *store.Handoff, p psps, log *zap.Logger, reg prometheus.Registerer, wake chan struct{}, wakeRelay func()) worker.Loop {
	byScope := apply.PSPs{}
	for scope, a := range p.byScope {
		byScope[scope] = a
	}
	return apply.NewWorker(st, byScope, log.Named("apply"), reg, apply.Config{
		Batch: cfg.ApplyBatch, Workers: cfg.Workers, Lease: cfg.ApplyLease, Poll: cfg.ApplyPoll, Linger: cfg.ApplyLinger, MaxAttempts: cfg.ApplyMaxAttempts,
		Backoff: backoff.Policy{Base: cfg.ApplyBackoffBase, Cap: cfg.ApplyBackoffCap}, WakeRelay: wakeRelay,
		ChargebackCreditNote: p.creditNote, Handoff: handoff,
	}, wake).Run
}
