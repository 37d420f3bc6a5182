// Package sweep is the reconciler's missing-document sweep, the safety net of
// guarantee 5: every paid payment older than a grace period must have an
// invoice and every succeeded refund a credit note in invoicer.fiscal_documents.
// For those that have not, the sweep asks ingest to announce their events
// again (POST /admin/outbox/republish on ingest's admin API, up to
// pspaudit.MaxRepublish event keys a request): ingest makes
// the outbox row due once more in its own transaction and the relay
// publishes it, signed with the relay's key. The reconciler never reads an
// event's payload (it carries the buyer's fiscal snapshot) and sends
// nothing to the billing queue itself. That is harmless by design: the
// invoicer records documents with ON CONFLICT DO NOTHING, so an event that
// arrives twice still yields one document.
//
// A run's cost does not grow with history. The recent pass looks only at
// what became final since the last run's watermark (minus an overlap, for
// late commits and clock skew); the full pass re-checks older history a
// bounded slice per run, from a cursor, and starts over once it reaches
// the recent pass. The rows of the overlap that the previous run found
// with a valid document are not looked up again (the Sweeper remembers
// them in memory; a new process looks them up once): a valid document
// leaves that state only for a rejection, which opens its own case, or a
// person's voiding, and the full pass re-checks every row in its turn.
// Nor are most of the other rows looked up one by one: each pass reads the
// documents created over its span of time in id order (docStream), a
// range of the primary key, and looks up only the rows whose valid
// document it did not see there. Both positions are kept in reconciler.sweep_state. A
// request to ingest that fails becomes a finding (KindRepublishFailed),
// retried each run, and the run goes on with the next rows.
//
// A document counts only when it is valid (authorized or issued). Each
// payment or refund found without one, and without an open case in ingest
// or the invoicer, also opens (or refreshes) a missing_document case in
// reconciler.cases, whose evidence says what became of its event (a
// failed request feeds the case: its evidence says send_failed, and the
// republish_failed finding stays the sweep's retry record); the case
// closes by itself once a valid document exists.
//
// The sweep reads ingest and invoicer through their own connections (which may
// be different databases), a page at a time with short keyset queries, and
// holds no transaction open; it never writes either schema.
package sweep

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/reconciler/internal/pspaudit"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// Announcer asks ingest to announce billing events again;
// *pspaudit.IngestAdmin is one.
type Announcer interface {
	Republish(ctx context.Context, keys []string) (pspaudit.Republished, error)
}

// Defaults of the Config fields a zero value leaves unset.
const (
	// DefaultOverlap is how far before the watermark the recent pass
	// starts again: it covers a payment committed late or stamped by a
	// clock behind the reconciler's. The grace already keeps the pass ten
	// minutes (by default) behind now, so a payment escapes it only from a
	// transaction open longer than grace plus overlap, or a clock that far
	// off; the full pass still finds it. Every run re-reads the payments of
	// one overlap, so it is kept short (an hour re-read 612,000 payments a
	// run at 170 a second); those it found with a valid document the run
	// before are not looked up again.
	DefaultOverlap = 2 * time.Minute
	// DefaultFullSlice is how many payments, and as many refunds, the full
	// pass re-checks per run.
	DefaultFullSlice = 5000
)

// KindRepublishFailed is the finding of a missing document whose event
// ingest could not be asked to announce again; its reference is the event
// key. Each run tries it again and closes it once the document exists or
// ingest took the request.
const KindRepublishFailed = "republish_failed"

// Config tunes the sweep.
type Config struct {
	// Grace is how old a payment or refund must be before its missing
	// document counts: younger ones may still be on their way.
	Grace time.Duration
	// PageSize is how many payments or refunds one query reads.
	PageSize int
	// MaxPerRun caps the events one Run has announced again (or fails
	// to), so that a misconfigured invoicer database (which makes every
	// document look missing) cannot flood the queue; the rest wait for the
	// next run.
	MaxPerRun int
	// Overlap is how far before its watermark the recent pass starts;
	// zero means DefaultOverlap.
	Overlap time.Duration
	// FullSlice is how many of each source the full pass re-checks per
	// run; zero means DefaultFullSlice.
	FullSlice int
}

// Result counts what one Run saw and did.
type Result struct {
	Checked       int  // payments and refunds past the grace period examined, by both passes
	Known         int  // of those, the ones the recent pass did not look up: the previous run found their document valid
	Streamed      int  // of those, the ones not looked up either: the pass read their valid document in creation order
	FullChecked   int  // of those, the ones the full pass's slice examined
	Missing       int  // of those, the ones without their document
	Republished   int  // events ingest made due again (failed ones retried included)
	MissingEvents int  // missing ones without an outbox row to announce
	Parked        int  // missing ones whose outbox row is parked (ingest refused them)
	Failed        int  // requests to ingest that failed: each is a KindRepublishFailed finding
	Capped        bool // Run stopped at MaxPerRun
	Cases         int  // missing_document cases opened or seen again
	Resolved      int  // missing_document cases closed because their document now exists
}

// Metrics are the sweep's Prometheus counters and its passes' durations.
type Metrics struct {
	republished   prometheus.Counter
	missingEvents prometheus.Counter
	failed        prometheus.Counter
	checked       *prometheus.CounterVec
	known         prometheus.Counter
	streamed      prometheus.Counter
	passTook      *prometheus.HistogramVec
}

// NewMetrics registers the sweep's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		republished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_republished_total",
			Help: "Billing events ingest announced again, at the sweep's request, because their fiscal document was missing after the grace period.",
		}),
		missingEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_missing_events_total",
			Help: "Paid payments or succeeded refunds without a document whose outbox event does not exist either.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_republish_failures_total",
			Help: "Billing events the sweep could not ask ingest to announce again (each an open republish_failed finding).",
		}),
		checked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_reconciler_sweep_checked_total",
			Help: "Payments and refunds the sweep examined, by pass (recent: since the watermark; full: the slice of older history).",
		}, []string{"pass"}),
		known: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_sweep_known_valid_total",
			Help: "Payments and refunds the recent pass read again within its overlap and did not look up, the previous run having found their document valid.",
		}),
		streamed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_sweep_streamed_valid_total",
			Help: "Payments and refunds the sweep did not look up one by one, having read their valid document among those created over its pass's span of time.",
		}),
		passTook: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceflow_reconciler_sweep_pass_duration_seconds",
			Help:    "How long each run's recent pass and full-pass slice took, payments and refunds together, failed runs included: the sweep phase's two parts.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"pass"}),
	}
	reg.MustRegister(m.republished, m.missingEvents, m.failed, m.checked, m.known, m.streamed, m.passTook)
	return m
}

// Sweeper runs the sweep. It is safe for concurrent use, and two sweeps at
// once (two run-once jobs, a job and the leader) only announce some events
// twice and re-check some rows.
type Sweeper struct {
	ingest    *store.IngestReader
	invoicer  *store.InvoicerReader
	announcer Announcer
	cfg       Config
	log       *zap.Logger
	metrics   *Metrics

	mu sync.Mutex
	// known holds, by source kind, the ids the last recent pass found with
	// a valid document that the next one reads again (within its overlap),
	// with the time each became final.
	known map[string]map[string]time.Time
}

// New returns a Sweeper reading payments and refunds through ingest and
// documents through invoicer, and asking announcer (ingest's admin API)
// to announce a missing document's event again.
func New(ingest *store.IngestReader, invoicer *store.InvoicerReader, announcer Announcer, cfg Config, log *zap.Logger, m *Metrics) *Sweeper {
	if cfg.Overlap <= 0 {
		cfg.Overlap = DefaultOverlap
	}
	if cfg.FullSlice <= 0 {
		cfg.FullSlice = DefaultFullSlice
	}
	return &Sweeper{ingest: ingest, invoicer: invoicer, announcer: announcer, cfg: cfg, log: log, metrics: m,
		known: map[string]map[string]time.Time{}}
}

// knownValid returns the ids of kind the last recent pass found with a
// valid document, with the time each became final; the caller only reads
// them.
func (s *Sweeper) knownValid(kind string) map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[kind]
}

// remember keeps found as the ids of kind known to have a valid document:
// those the next recent pass reads again, with when each became final.
func (s *Sweeper) remember(kind string, found map[string]time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known[kind] = found
}

// Run retries the requests that failed before, then sweeps the payments, then
// the refunds, that became final before now minus the grace period: the
// recent pass from the watermark kept in own, then a slice of the full
// pass. It returns the counts so far together with the first error: a
// database failure ends the run, and the next run starts from the
// positions saved so far, as does ingest refusing us. A request that
// fails otherwise does not: it becomes a finding and the run goes on.
func (s *Sweeper) Run(ctx context.Context, own *store.Store) (Result, error) {
	cutoff := time.Now().Add(-s.cfg.Grace)
	r := &run{Sweeper: s, own: own, retried: map[string]bool{}}
	defer r.observePasses()
	if err := r.closeResolved(ctx); err != nil {
		return r.res, err
	}
	if err := r.retryFailed(ctx); err != nil {
		return r.res, err
	}
	for _, src := range s.sources() {
		if err := r.sweep(ctx, src, cutoff); err != nil {
			return r.res, err
		}
		if r.res.Capped {
			s.log.Warn("sweep stopped at the per-run maximum", zap.Int("max_per_run", s.cfg.MaxPerRun),
				zap.String("source_kind", src.kind))
			break
		}
	}
	return r.res, nil
}

// run is one Run's state: where it records, what it counted, and the
// event keys it already retried (asked for once per run at most).
type run struct {
	*Sweeper
	own                  *store.Store
	res                  Result
	retried              map[string]bool
	failures             int           // requests to ingest failed one after the other
	recentTook, fullTook time.Duration // the passes' time so far, both sources
}

// observePasses records how long the run's passes took, once a run.
func (r *run) observePasses() {
	r.metrics.passTook.WithLabelValues("recent").Observe(r.recentTook.Seconds())
	r.metrics.passTook.WithLabelValues("full").Observe(r.fullTook.Seconds())
}

// source is one kind of thing that must have a document.
type source struct {
	kind     string                 // fiscal_documents.source_kind
	docKind  string                 // fiscal_documents.kind
	eventKey func(id string) string // its event's key in ingest.outbox
	page     func(context.Context, time.Time, store.Position, int) ([]store.Position, error)
}

func (s *Sweeper) sources() []source {
	return []source{
		{kind: "payment", docKind: "invoice", eventKey: PaymentEventKey, page: s.paymentsPage},
		{kind: "refund", docKind: "credit_note", eventKey: RefundEventKey, page: s.refundsPage},
	}
}

// PaymentEventKey is the outbox key ingest gives a payment's paid event.
func PaymentEventKey(id string) string { return "payment:" + id + ":paid" }

// RefundEventKey is the outbox key ingest gives a refund's succeeded event.
func RefundEventKey(id string) string { return "refund:" + id + ":succeeded" }

func (s *Sweeper) paymentsPage(ctx context.Context, before time.Time, after store.Position, limit int) ([]store.Position, error) {
	rows, err := s.ingest.PaymentsPaidBefore(ctx, before, store.Payment{ID: after.ID, PaidAt: after.At}, limit)
	if err != nil {
		return nil, err
	}
	out := make([]store.Position, len(rows))
	for i, r := range rows {
		out[i] = store.Position{At: r.PaidAt, ID: r.ID}
	}
	return out, nil
}

func (s *Sweeper) refundsPage(ctx context.Context, before time.Time, after store.Position, limit int) ([]store.Position, error) {
	rows, err := s.ingest.RefundsSucceededBefore(ctx, before, store.Refund{ID: after.ID, SucceededAt: after.At}, limit)
	if err != nil {
		return nil, err
	}
	out := make([]store.Position, len(rows))
	for i, r := range rows {
		out[i] = store.Position{At: r.SucceededAt, ID: r.ID}
	}
	return out, nil
}
