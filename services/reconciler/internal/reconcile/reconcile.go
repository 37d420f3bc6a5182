// Package reconcile runs reconciliations: each opens a row in
// reconciler.runs, runs the missing-document sweep and the checks that
// produce findings (the stuck-work detectors), or the audits (the provider's
// and the PSPs'), or all of them, records the findings, and closes the row
// with the counts and the error, if any.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/reconciler/internal/findings"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// Run outcomes, the values of the runs_total metric's outcome label.
const (
	OutcomeOK      = "ok"      // the run finished without error
	OutcomeError   = "error"   // the run failed; its runs row says why
	OutcomeSkipped = "skipped" // another instance held the lease
)

// Sweeper is the missing-document sweep as Once uses it; it keeps where it
// stands, and the requests to ingest that failed, in the reconciler's own
// schema, own.
type Sweeper interface {
	Run(ctx context.Context, own *store.Store) (sweep.Result, error)
}

// Checker is one family of checks: it reports what it sees now, and owns
// the finding kinds it lists, so a run closes those it no longer sees.
type Checker interface {
	Name() string
	Kinds() []string
	Run(ctx context.Context, now time.Time) ([]store.Finding, error)
}

// CaseChecker is a Checker whose findings are also cases of CaseKind (the
// audit's disagreements): each opens one, subject
// "audit:<finding kind>:<reference>", unless an operator closed it already.
type CaseChecker interface {
	Checker
	CaseKind() string
}

// Part is what one run does, as reconciler.runs.part records it.
type Part string

// The parts a run may do.
const (
	// PartAll is the sweep, the checks and then the audits: run-once and
	// POST /admin/runs.
	PartAll Part = "all"
	// PartSweep is the sweep and the checks: serve's loop.
	PartSweep Part = "sweep"
	// PartAudit is the audits alone: serve's other loop, so that a listing
	// which takes hours at its pace holds back neither the sweep nor the
	// lease.
	PartAudit Part = "audit"
)

// Parts are what a Reconciler runs.
type Parts struct {
	Sweep Sweeper
	// Checks run with the sweep: reads of our own databases.
	Checks []Checker
	// Audits ask the outside (the e-invoicing provider, the PSPs) and
	// keep to its pace, so one may take hours: serve runs them apart.
	Audits []Checker
	// KeepRuns is how long reconciler.runs keeps a run: each run that
	// sweeps then deletes those started longer ago (prune). Zero keeps
	// every run.
	KeepRuns time.Duration
}

// PhaseSweep names the missing-document sweep among a run's phases; each
// checker's phase is its Name.
const PhaseSweep = "sweep"

// Phase is how long one part of a run took: the sweep, or one checker
// together with recording its findings.
type Phase struct {
	Name string
	Took time.Duration
}

// Summary is what one reconciliation did.
type Summary struct {
	RunID    int64
	Sweep    sweep.Result
	Findings int     // findings seen by this run
	Closed   int     // findings this run closed
	Phases   []Phase // in the order they ran
}

// String renders the summary as the one line run-once prints.
func (s Summary) String() string {
	return fmt.Sprintf("reconcile: checked=%d missing=%d republished=%d missing_events=%d findings=%d closed=%d",
		s.Sweep.Checked, s.Sweep.Missing, s.Sweep.Republished, s.Sweep.MissingEvents, s.Findings, s.Closed)
}

// Metrics are the reconciliation's Prometheus series.
type Metrics struct {
	runs      *prometheus.CounterVec
	lastRun   prometheus.Gauge
	lastAudit prometheus.Gauge // nil when no audit runs
	phase     *prometheus.HistogramVec
	pruned    prometheus.Counter
}

// NewMetrics registers the run metrics with reg; the audits' last success
// only when audits is true, so that an instance without them exports no
// gauge that would look stale.
func NewMetrics(reg prometheus.Registerer, audits bool) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_reconciler_runs_total",
			Help: "Reconciliation runs by outcome (ok, error, skipped when another instance held the lease).",
		}, []string{"outcome"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "onceflow_reconciler_last_run_timestamp_seconds",
			Help: "Unix time at which the last successful run of the sweep and the detectors finished; alert when it grows old.",
		}),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceflow_reconciler_phase_duration_seconds",
			Help:    "How long each phase of a reconciliation took, failed ones included: sweep, detectors, audit, psp_audit.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"phase"}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "onceflow_reconciler_pruned_total",
			Help:        "Rows deleted by retention, by table (runs: RECONCILER_RUNS_RETENTION).",
			ConstLabels: prometheus.Labels{"table": "runs"},
		}),
	}
	for _, o := range []string{OutcomeOK, OutcomeError, OutcomeSkipped} {
		m.runs.WithLabelValues(o)
	}
	reg.MustRegister(m.runs, m.lastRun, m.phase, m.pruned)
	if audits {
		m.lastAudit = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "onceflow_reconciler_last_audit_timestamp_seconds",
			Help: "Unix time at which the last successful run of the audits finished; alert when it grows old.",
		})
		reg.MustRegister(m.lastAudit)
	}
	return m
}

// succeeded records that a run of part has succeeded.
func (m *Metrics) succeeded(part Part) {
	m.runs.WithLabelValues(OutcomeOK).Inc()
	if part != PartAudit {
		m.lastRun.SetToCurrentTime()
	}
	if part != PartSweep && m.lastAudit != nil {
		m.lastAudit.SetToCurrentTime()
	}
}

// Skipped counts a tick on which this instance did not hold the lease.
func (m *Metrics) Skipped() { m.runs.WithLabelValues(OutcomeSkipped).Inc() }

// Failed counts a tick that could not run, e.g. because taking the lease failed.
func (m *Metrics) Failed() { m.runs.WithLabelValues(OutcomeError).Inc() }

// Reconciler runs reconciliations and records them in reconciler.runs.
type Reconciler struct {
	runs     *store.Store
	findings *findings.Recorder
	parts    Parts
	log      *zap.Logger
	metrics  *Metrics
}

// New returns a Reconciler recording runs and findings through runs (the
// reconciler's own schema) and running parts.
func New(runs *store.Store, parts Parts, log *zap.Logger, m *Metrics) *Reconciler {
	return &Reconciler{runs: runs, findings: findings.New(runs), parts: parts, log: log, metrics: m}
}

// Once runs one whole reconciliation: Run of PartAll.
func (r *Reconciler) Once(ctx context.Context) (Summary, error) { return r.Run(ctx, PartAll) }

// Run runs one reconciliation of part. The runs row is opened before and
// closed after the work, also when the work fails, in which case the
// returned error is the work's and the row carries its text. Two runs at
// the same time are safe: each records its own row, the invoicer ignores
// the events they both have ingest announce again, and two audits only
// list or look up some documents twice. A run that sweeps then deletes the
// runs older than KeepRuns.
func (r *Reconciler) Run(ctx context.Context, part Part) (Summary, error) {
	start := time.Now()
	run, err := r.runs.StartRun(ctx, string(part))
	if err != nil {
		r.metrics.runs.WithLabelValues(OutcomeError).Inc()
		return Summary{}, err
	}
	sum, err := r.work(ctx, part, run)
	if ferr := r.finish(ctx, run.ID, sum, err); ferr != nil && err == nil {
		err = ferr
	}
	r.report(part, sum, time.Since(start), err)
	if part != PartAudit {
		r.prune(ctx)
	}
	return sum, err
}

// pruneBatch is how many of the oldest runs one statement of prune reads.
const pruneBatch = 1000

// prune deletes the runs started longer than KeepRuns ago, pruneBatch at a
// time until a statement deletes fewer, so a long history is caught up with
// in one go. The run pruning is newer than any it deletes, so the console's
// last run stays. A failure is logged; the next run that sweeps tries again.
func (r *Reconciler) prune(ctx context.Context) {
	if r.parts.KeepRuns <= 0 {
		return
	}
	before := time.Now().Add(-r.parts.KeepRuns)
	for {
		n, err := r.runs.PruneRuns(ctx, before, pruneBatch)
		r.metrics.pruned.Add(float64(n))
		if err != nil {
			r.log.Warn("prune runs", zap.Error(err))
			return
		}
		if n < pruneBatch {
			return
		}
	}
}

// work runs part of the reconciliation recorded as run: the sweep and the
// checks, the audits, or both.
func (r *Reconciler) work(ctx context.Context, part Part, run store.Run) (Summary, error) {
	sum := Summary{RunID: run.ID}
	var err error
	var checks []Checker
	if part != PartAudit {
		began := time.Now()
		sum.Sweep, err = r.parts.Sweep.Run(ctx, r.runs)
		r.timed(&sum, PhaseSweep, began)
		if err != nil {
			err = fmt.Errorf("sweep: %w", err)
		}
		checks = r.parts.Checks
	}
	if part != PartSweep {
		checks = append(slices.Clip(checks), r.parts.Audits...)
	}
	if cerr := r.check(ctx, checks, run.StartedAt, &sum); cerr != nil && err == nil {
		err = cerr
	}
	return sum, err
}

// report logs a run's line and counts its outcome.
func (r *Reconciler) report(part Part, sum Summary, took time.Duration, err error) {
	fields := []zap.Field{
		zap.Int64("run_id", sum.RunID), zap.String("part", string(part)),
		zap.Int("checked", sum.Sweep.Checked), zap.Int("missing", sum.Sweep.Missing),
		zap.Int("full_checked", sum.Sweep.FullChecked), zap.Int("known_valid", sum.Sweep.Known), zap.Int("republished", sum.Sweep.Republished),
		zap.Int("missing_events", sum.Sweep.MissingEvents), zap.Int("republish_failed", sum.Sweep.Failed),
		zap.Bool("capped", sum.Sweep.Capped), zap.Int("findings", sum.Findings), zap.Int("closed", sum.Closed),
		zap.Duration("took", took),
	}
	for _, p := range sum.Phases {
		fields = append(fields, zap.Duration(p.Name+"_took", p.Took))
	}
	if err != nil {
		r.metrics.runs.WithLabelValues(OutcomeError).Inc()
		r.log.Error("reconciliation failed", append(fields, zap.Error(err))...)
		return
	}
	r.metrics.succeeded(part)
	r.log.Info("reconciliation done", fields...)
}

// check runs every checker of checks and records its findings. A checker
// that fails closes nothing, so a failing check never makes findings look
// resolved; the others still run.
func (r *Reconciler) check(ctx context.Context, checks []Checker, started time.Time, sum *Summary) error {
	var errs []error
	for _, c := range checks {
		began := time.Now()
		found, err := c.Run(ctx, started)
		if err == nil {
			var closed int64
			closed, err = r.findings.Record(ctx, c.Kinds(), found, started)
			sum.Findings += len(found)
			sum.Closed += int(closed)
		}
		if cc, ok := c.(CaseChecker); ok && err == nil {
			err = r.openCases(ctx, cc.CaseKind(), found)
		}
		r.timed(sum, c.Name(), began)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// timed records that the phase name, begun at began, has ended.
func (r *Reconciler) timed(sum *Summary, name string, began time.Time) {
	took := time.Since(began)
	sum.Phases = append(sum.Phases, Phase{Name: name, Took: took})
	r.metrics.phase.WithLabelValues(name).Observe(took.Seconds())
}

// openCases opens a case of kind for each finding.
func (r *Reconciler) openCases(ctx context.Context, kind string, found []store.Finding) error {
	for _, f := range found {
		err := r.runs.OpenCaseUnlessClosed(ctx, store.NewCase{Kind: kind, Subject: "audit:" + f.Kind + ":" + f.Reference,
			Evidence: map[string]string{"finding": f.Kind, "reference": f.Reference, "detail": f.Detail}})
		if err != nil {
			return err
		}
	}
	return nil
}

// finish closes the runs row. It uses a context that outlives ctx's
// cancellation for a few seconds, so a run cut short by shutdown is still
// recorded as failed rather than left open.
func (r *Reconciler) finish(ctx context.Context, id int64, sum Summary, runErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return r.runs.FinishRun(ctx, id, store.RunResult{
		Checked:        sum.Sweep.Checked,
		Missing:        sum.Sweep.Missing,
		MissingEvents:  sum.Sweep.MissingEvents,
		Republished:    sum.Sweep.Republished,
		FindingsSeen:   sum.Findings,
		FindingsClosed: sum.Closed,
		Err:            runErr,
	})
}
