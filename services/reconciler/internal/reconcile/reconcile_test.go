package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcile"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

// sweepFunc adapts a function to reconcile.Sweeper.
type sweepFunc func(context.Context) (sweep.Result, error)

func (f sweepFunc) Run(ctx context.Context, _ *store.Store) (sweep.Result, error) { return f(ctx) }

func TestOnceRecordsTheRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		sweep   func(ctx context.Context, cancel context.CancelFunc) (sweep.Result, error)
		wantRun reconcilertest.Run
		wantErr string
		outcome string
	}{{
		name: "finished",
		sweep: func(context.Context, context.CancelFunc) (sweep.Result, error) {
			return sweep.Result{Checked: 7, Missing: 2, Republished: 2}, nil
		},
		wantRun: reconcilertest.Run{Part: "all", Checked: 7, Republished: 2, Finished: true},
		outcome: reconcile.OutcomeOK,
	}, {
		// Shutdown cancels the run's context mid-sweep: the row is still
		// closed, with what was done and why it stopped.
		name: "cut short",
		sweep: func(ctx context.Context, cancel context.CancelFunc) (sweep.Result, error) {
			cancel()
			return sweep.Result{Checked: 3, Missing: 1, Republished: 1}, ctx.Err()
		},
		wantRun: reconcilertest.Run{Part: "all", Checked: 3, Republished: 1, Finished: true},
		wantErr: "sweep: context canceled",
		outcome: reconcile.OutcomeError,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := reconcilertest.NewDB(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reg := prometheus.NewRegistry()
			sw := sweepFunc(func(ctx context.Context) (sweep.Result, error) { return tt.sweep(ctx, cancel) })
			r := reconcile.New(store.New(db.Pool), reconcile.Parts{Sweep: sw}, zaptest.NewLogger(t), reconcile.NewMetrics(reg, false))

			_, err := r.Once(ctx)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Errorf("Once error = %q, want %q", gotErr, tt.wantErr)
			}
			runs := db.Runs(t)
			if len(runs) != 1 {
				t.Fatalf("runs = %+v, want one", runs)
			}
			got := runs[0]
			if gotErr := deref(got.Error); gotErr != tt.wantErr {
				t.Errorf("runs.error = %q, want %q", gotErr, tt.wantErr)
			}
			got.Error = nil
			if got != tt.wantRun {
				t.Errorf("run = %+v, want %+v", got, tt.wantRun)
			}
			n, err := testutil.GatherAndCount(reg, "onceflow_reconciler_runs_total")
			if err != nil || n != 3 {
				t.Errorf("runs_total series = %d (%v), want ok, error and skipped", n, err)
			}
			for _, o := range []string{reconcile.OutcomeOK, reconcile.OutcomeError} {
				want := 0
				if o == tt.outcome {
					want = 1
				}
				if got := runsTotal(t, reg, o); got != want {
					t.Errorf("runs_total{outcome=%q} = %d, want %d", o, got, want)
				}
			}
		})
	}
}

func TestSummaryLine(t *testing.T) {
	t.Parallel()
	s := reconcile.Summary{Sweep: sweep.Result{Checked: 9, Missing: 3, Republished: 2, MissingEvents: 1}, Findings: 4, Closed: 1}
	if got, want := s.String(), "reconcile: checked=9 missing=3 republished=2 missing_events=1 findings=4 closed=1"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func runsTotal(tb testing.TB, reg *prometheus.Registry, outcome string) int {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "onceflow_reconciler_runs_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == outcome {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	tb.Fatalf("no runs_total{outcome=%q}", outcome)
	return 0
}

// failing is a check whose every run fails.
type failing struct{}

func (failing) Name() string    { return "detectors" }
func (failing) Kinds() []string { return []string{"receipt_stuck"} }
func (failing) Run(context.Context, time.Time) ([]store.Finding, error) {
	return nil, errors.New("the database went away")
}

// Each phase of a run is timed, in the order it ran, a failed one too, and
// the phase histogram holds one observation of each with the same time.
func TestOnceTimesEachPhase(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	reg := prometheus.NewRegistry()
	sw := sweepFunc(func(context.Context) (sweep.Result, error) { return sweep.Result{Checked: 1}, nil })
	r := reconcile.New(store.New(db.Pool), reconcile.Parts{Sweep: sw, Checks: []reconcile.Checker{failing{}}, Audits: []reconcile.Checker{disagreeing{}}}, zaptest.NewLogger(t), reconcile.NewMetrics(reg, true))

	sum, err := r.Once(context.Background())
	if err == nil || !strings.Contains(err.Error(), "detectors: the database went away") {
		t.Fatalf("Once error = %v, want the failing check's", err)
	}
	var names []string
	for _, p := range sum.Phases {
		names = append(names, p.Name)
	}
	if want := []string{reconcile.PhaseSweep, "detectors", "audit"}; !slices.Equal(names, want) {
		t.Fatalf("phases = %v, want %v", names, want)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	observed := map[string]*dto.Histogram{}
	for _, f := range families {
		if f.GetName() == "onceflow_reconciler_phase_duration_seconds" {
			for _, m := range f.GetMetric() {
				observed[m.GetLabel()[0].GetValue()] = m.GetHistogram()
			}
		}
	}
	for _, p := range sum.Phases {
		h := observed[p.Name]
		if h.GetSampleCount() != 1 || h.GetSampleSum() != p.Took.Seconds() {
			t.Errorf("phase %s: histogram count %d sum %v, want 1 and %v", p.Name, h.GetSampleCount(), h.GetSampleSum(), p.Took.Seconds())
		}
	}
	if len(observed) != len(sum.Phases) {
		t.Errorf("histogram phases = %d, want %d", len(observed), len(sum.Phases))
	}
}

// counted is a check that counts its runs and finds nothing.
type counted struct {
	name string
	runs int
}

func (c *counted) Name() string    { return c.name }
func (c *counted) Kinds() []string { return []string{c.name + "_kind"} }
func (c *counted) Run(context.Context, time.Time) ([]store.Finding, error) {
	c.runs++
	return nil, nil
}

// Serve's two loops each run their part, the sweep with the checks or the
// audits alone, and Once all of them. Each run records its part and sets
// the last-success gauge of what it ran, and the console's last run is the
// last that swept.
func TestEachPartRunsItsOwn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		part                     reconcile.Part
		sweeps, checks, audits   int
		sweptGauge, auditedGauge bool
	}{
		{part: reconcile.PartSweep, sweeps: 1, checks: 1, sweptGauge: true},
		{part: reconcile.PartAudit, audits: 1, auditedGauge: true},
		{part: reconcile.PartAll, sweeps: 1, checks: 1, audits: 1, sweptGauge: true, auditedGauge: true},
	}
	for _, tt := range tests {
		t.Run(string(tt.part), func(t *testing.T) {
			t.Parallel()
			db := reconcilertest.NewDB(t)
			reg := prometheus.NewRegistry()
			sweeps := 0
			sw := sweepFunc(func(context.Context) (sweep.Result, error) { sweeps++; return sweep.Result{Checked: 5}, nil })
			check, audit := &counted{name: "detectors"}, &counted{name: "audit"}
			own := store.New(db.Pool)
			r := reconcile.New(own, reconcile.Parts{Sweep: sw, Checks: []reconcile.Checker{check}, Audits: []reconcile.Checker{audit}},
				zaptest.NewLogger(t), reconcile.NewMetrics(reg, true))

			if _, err := r.Run(t.Context(), tt.part); err != nil {
				t.Fatal(err)
			}
			if sweeps != tt.sweeps || check.runs != tt.checks || audit.runs != tt.audits {
				t.Errorf("ran sweep %d, checks %d, audits %d times, want %d, %d, %d", sweeps, check.runs, audit.runs, tt.sweeps, tt.checks, tt.audits)
			}
			if runs := db.Runs(t); len(runs) != 1 || runs[0].Part != string(tt.part) || !runs[0].Finished {
				t.Errorf("runs = %+v, want one finished of part %s", runs, tt.part)
			}
			if got := gaugeSet(t, reg, "onceflow_reconciler_last_run_timestamp_seconds"); got != tt.sweptGauge {
				t.Errorf("last run gauge set = %v, want %v", got, tt.sweptGauge)
			}
			if got := gaugeSet(t, reg, "onceflow_reconciler_last_audit_timestamp_seconds"); got != tt.auditedGauge {
				t.Errorf("last audit gauge set = %v, want %v", got, tt.auditedGauge)
			}
			last, err := own.LastRun(t.Context())
			if swept := err == nil && last.Checked == 5; swept != tt.sweptGauge {
				t.Errorf("the last run that swept: %+v (%v), want one: %v", last, err, tt.sweptGauge)
			}
		})
	}
}

// Without audits there is no last-audit gauge, which would only look stale.
func TestNoAuditsNoAuditGauge(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reconcile.NewMetrics(reg, false)
	if n, err := testutil.GatherAndCount(reg, "onceflow_reconciler_last_audit_timestamp_seconds"); err != nil || n != 0 {
		t.Errorf("last audit gauge series = %d (%v), want none", n, err)
	}
}

// gaugeSet reports whether the gauge called name is registered and set.
func gaugeSet(tb testing.TB, reg *prometheus.Registry, name string) bool {
	tb.Helper()
	v, _ := reconcilertest.Metric(tb, reg, name)
	return v > 0
}

// A run that sweeps deletes the runs started longer than KeepRuns ago,
// more than one statement's worth, and counts them; an audit's run, which
// may last hours, leaves them.
func TestSweepsPruneOldRuns(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	ctx := t.Context()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO reconciler.runs (part, started_at, finished_at)
		SELECT CASE WHEN g % 2 = 0 THEN 'audit' ELSE 'sweep' END, now() - interval '40 days', now() - interval '40 days'
		FROM generate_series(1, 1500) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO reconciler.runs (part, started_at, checked) VALUES ('sweep', now() - interval '29 days', 7)`); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	sw := sweepFunc(func(context.Context) (sweep.Result, error) { return sweep.Result{Checked: 5}, nil })
	r := reconcile.New(store.New(db.Pool), reconcile.Parts{Sweep: sw, Audits: []reconcile.Checker{&counted{name: "audit"}}, KeepRuns: 30 * 24 * time.Hour},
		zaptest.NewLogger(t), reconcile.NewMetrics(reg, true))

	if _, err := r.Run(ctx, reconcile.PartAudit); err != nil {
		t.Fatal(err)
	}
	if runs := db.Runs(t); len(runs) != 1502 {
		t.Fatalf("after an audit's run: %d runs, want all 1,502", len(runs))
	}
	if _, err := r.Run(ctx, reconcile.PartSweep); err != nil {
		t.Fatal(err)
	}
	want := []reconcilertest.Run{{Part: "sweep", Checked: 7}, {Part: "audit", Finished: true}, {Part: "sweep", Checked: 5, Finished: true}}
	if got := db.Runs(t); !slices.Equal(got, want) {
		t.Errorf("runs = %+v, want %+v", got, want)
	}
	if pruned, _ := reconcilertest.Metric(t, reg, "onceflow_reconciler_pruned_total"); pruned != 1500 {
		t.Errorf("onceflow_reconciler_pruned_total = %v, want 1500", pruned)
	}
}
