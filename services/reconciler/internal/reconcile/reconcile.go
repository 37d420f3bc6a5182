// Package reconcile runs one reconciliation: it opens a row in
// reconciler.runs, runs the missing-document sweep and then each check that
// produces findings (the stuck-work detectors, the provider audit), records
// the findings, and closes the row with the counts and the error, if any.
package reconcile

import (
	"context"
	"errors"
	"fmt"
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
	runs    *prometheus.CounterVec
	lastRun prometheus.Gauge
	phase   *prometheus.HistogramVec
}

// NewMetrics registers the run metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "onceflow_reconciler_runs_total",
			Help: "Reconciliation runs by outcome (ok, error, skipped when another instance held the lease).",
		}, []string{"outcome"}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "onceflow_reconciler_last_run_timestamp_seconds",
			Help: "Unix time at which the last successful reconciliation finished; alert when it grows old.",
		}),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "onceflow_reconciler_phase_duration_seconds",
			Help:    "How long each phase of a reconciliation took, failed ones included: sweep, detectors, audit, psp_audit.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"phase"}),
	}
	for _, o := range []string{OutcomeOK, OutcomeError, OutcomeSkipped} {
		m.runs.WithLabelValues(o)
	}
	reg.MustRegister(m.runs, m.lastRun, m.phase)
	return m
}

// Skipped counts a tick on which this instance did not hold the lease.
func (m *Metrics) Skipped() { m.runs.WithLabelValues(OutcomeSkipped).Inc() }

// Failed counts a tick that could not run, e.g. because taking the lease failed.
func (m *Metrics) Failed() { m.runs.WithLabelValues(OutcomeError).Inc() }

// Reconciler runs reconciliations and records them in reconciler.runs.
type Reconciler struct {
	runs     *store.Store
	findings *findings.Recorder
	sweep    Sweeper
	checks   []Checker
	log      *zap.Logger
	metrics  *Metrics
}

// New returns a Reconciler recording runs and findings through runs (the
// reconciler's own schema), sweeping with sw and then running checks.
func New(runs *store.Store, sw Sweeper, log *zap.Logger, m *Metrics, checks ...Checker) *Reconciler {
	return &Reconciler{runs: runs, findings: findings.New(runs), sweep: sw, checks: checks, log: log, metrics: m}
}

// Once runs one reconciliation. The runs row is opened before and closed
// after the work, also when the work fails, in which case the returned error
// is the work's and the row carries its text. Two Once calls at the same time
// are safe: each records its own row and the invoicer ignores the events
// they both have ingest announce again.
func (r *Reconciler) Once(ctx context.Context) (Summary, error) {
	start := time.Now()
	run, err := r.runs.StartRun(ctx)
	if err != nil {
		r.metrics.runs.WithLabelValues(OutcomeError).Inc()
		return Summary{}, err
	}
	log := r.log.With(zap.Int64("run_id", run.ID))
	sum := Summary{RunID: run.ID}
	began := time.Now()
	sum.Sweep, err = r.sweep.Run(ctx, r.runs)
	r.timed(&sum, PhaseSweep, began)
	if err != nil {
		err = fmt.Errorf("sweep: %w", err)
	}
	if cerr := r.check(ctx, run.StartedAt, &sum); cerr != nil && err == nil {
		err = cerr
	}
	if ferr := r.finish(ctx, run.ID, sum, err); ferr != nil && err == nil {
		err = ferr
	}
	fields := []zap.Field{
		zap.Int("checked", sum.Sweep.Checked), zap.Int("missing", sum.Sweep.Missing),
		zap.Int("full_checked", sum.Sweep.FullChecked), zap.Int("republished", sum.Sweep.Republished),
		zap.Int("missing_events", sum.Sweep.MissingEvents), zap.Int("republish_failed", sum.Sweep.Failed),
		zap.Bool("capped", sum.Sweep.Capped), zap.Int("findings", sum.Findings), zap.Int("closed", sum.Closed),
		zap.Duration("took", time.Since(start)),
	}
	for _, p := range sum.Phases {
		fields = append(fields, zap.Duration(p.Name+"_took", p.Took))
	}
	if err != nil {
		r.metrics.runs.WithLabelValues(OutcomeError).Inc()
		log.Error("reconciliation failed", append(fields, zap.Error(err))...)
		return sum, err
	}
	r.metrics.runs.WithLabelValues(OutcomeOK).Inc()
	r.metrics.lastRun.SetToCurrentTime()
	log.Info("reconciliation done", fields...)
	return sum, nil
}

// check runs every checker and records its findings. A checker that fails
// closes nothing, so a failing check never makes findings look resolved;
// the others still run.
func (r *Reconciler) check(ctx context.Context, started time.Time, sum *Summary) error {
	var errs []error
	for _, c := range r.checks {
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
