package soak

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/onceflow/onceflow/test/e2e/bench"
	"github.com/onceflow/onceflow/test/e2e/pgcluster"
)

// small is the verification run's shape.
func small() Config {
	c := Defaults()
	c.Documents, c.Window, c.Rate = 6000, 2000, 50
	c.PGSettings = pgcluster.Recommended // not this machine's shared buffers
	return c
}

func TestCheckNamesTheFlag(t *testing.T) {
	for flag, change := range map[string]func(*Config){
		"-out":             func(c *Config) { c.Out = "" },
		"-window":          func(c *Config) { c.Window = 0 },
		"-documents":       func(c *Config) { c.Documents = 5000 }, // not a multiple of 2000
		"-rate":            func(c *Config) { c.Rate = 0 },
		"-retention":       func(c *Config) { c.Retention = -time.Second },
		"-reconcile-every": func(c *Config) { c.ReconcileEvery = -time.Second },
		"-tolerance":       func(c *Config) { c.Tolerance = 0 },
		"-pg":              func(c *Config) { c.PG = "elsewhere" },
		"-timeout":         func(c *Config) { c.Timeout = 0 },
		"-env":             func(c *Config) { c.Env = []string{"NOVALUE"} },
		"-pg-settings":     func(c *Config) { c.PGSettings = []string{"fsync"} },
	} {
		c := small()
		change(&c)
		if err := c.Check(); err == nil || !strings.HasPrefix(err.Error(), flag) {
			t.Errorf("%s: Check() = %v, want an error naming %s", flag, err, flag)
		}
	}
	c := small()
	c.Documents = c.Window // one window: nothing to compare the last with
	if err := c.Check(); err == nil {
		t.Error("a single window passed Check")
	}
	if err := small().Check(); err != nil {
		t.Errorf("the small run: %v", err)
	}
	if err := Defaults().Check(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

func TestWindowArithmetic(t *testing.T) {
	c := small()
	if c.Windows() != 3 || c.WindowTime() != 40*time.Second || c.RunTime() != 120*time.Second {
		t.Fatalf("windows %d of %s, run %s; want 3 of 40s, 120s", c.Windows(), c.WindowTime(), c.RunTime())
	}
	for i, want := range map[int]int{0: 0, 1999: 0, 2000: 1, 5999: 2} {
		if got := c.window(i); got != want {
			t.Errorf("payment %d in window %d, want %d", i, got, want)
		}
	}
	// The order ids of payments lo to hi-1 (a window, a slice of one) are
	// one range, [orderID(lo), orderID(hi)).
	for _, r := range [][2]int{{0, 2000}, {2000, 7000}, {9995, 10005}, {99_995_000, maxDocuments}} {
		from, to := orderID("p-", r[0]), orderID("p-", r[1])
		for _, i := range []int{r[0], r[0] + 1, r[1] - 1} {
			if id := orderID("p-", i); id < from || id >= to {
				t.Errorf("[%s, %s) misses payment %d (%s)", from, to, i, id)
			}
		}
		if id := orderID("p-", r[1]); id < to {
			t.Errorf("[%s, %s) holds payment %d", from, to, r[1])
		}
		if r[0] > 0 && orderID("p-", r[0]-1) >= from {
			t.Errorf("[%s, %s) holds payment %d", from, to, r[0]-1)
		}
	}
	if id := orderID("p-", maxDocuments); len(id) != len(orderID("p-", 0)) {
		t.Errorf("order ids change width: %s", id)
	}
}

// A window is read in slices of LatencySlice payments, or whole when the
// slice is unset (a run recorded before the slices) or larger.
func TestSliceIsAtMostTheWindow(t *testing.T) {
	c := small()
	for slice, want := range map[int]int{SliceDocs: 2000, 500: 500, 0: 2000} {
		c.LatencySlice = slice
		if got := c.slice(); got != want {
			t.Errorf("LatencySlice %d, window 2000: slice %d, want %d", slice, got, want)
		}
	}
}

func TestRetentionKeepsTheServicesFloors(t *testing.T) {
	c := small()
	c.Retention = 20 * time.Second
	env := c.env()
	for _, want := range []string{
		"RELAY_RETENTION=20s", "RELAY_PRUNE_INTERVAL=5s", // a quarter of the retention
		"INGEST_RECEIPT_RETENTION=24h0m0s", "INGEST_IDEMPOTENCY_RETENTION=1h0m0s", "INVOICER_ATTEMPTS_RETENTION=1h0m0s",
		"INGEST_PRUNE_INTERVAL=1m0s", "INVOICER_ATTEMPTS_PRUNE_INTERVAL=15m0s",
		"RECONCILER_INTERVAL=10s", "RECONCILER_AUDIT_CURRENT_EVERY=20s", "RECONCILER_AUDIT_RATE=150", "RECONCILER_GRACE=2m0s", "INVOICER_PROVIDER_RATE_LIMIT=0",
		"INGEST_POLL_PAID_GIVE_UP=0s", "INGEST_POLL_AFTER=1m0s", "INGEST_POLL_INTERVAL=5s", "INGEST_POLL_BATCH=500", // twice the 50 orders a second recorded between two looks
	} {
		if !slices.Contains(env, want) {
			t.Errorf("env %v lacks %s", env, want)
		}
	}
	if env[len(env)-1] != "INVOICER_PROVIDER_RATE_LIMIT=0" {
		t.Errorf("-env is not last, so it cannot override: %v", env)
	}
	for _, p := range c.pruned() {
		if want := p.Setting == "RELAY_RETENTION"; p.Acts != want {
			t.Errorf("%s (%s %s): acts %v in a %s run, want %v", p.Table, p.Setting, p.Retention, p.Acts, c.RunTime(), want)
		}
	}
	// -env's settings are the ones the verdict goes by.
	c.Env = []string{"RELAY_RETENTION=1m", "RELAY_RETENTION=30s", "RELAY_PRUNE_INTERVAL=2s"}
	if p := c.pruned()[0]; p.Table != "ingest.outbox" || p.Retention != 30*time.Second || p.Interval != 2*time.Second {
		t.Errorf("with %v: %+v, want the relay's outboxes kept 30s, pruned every 2s", c.Env, p)
	}
	// The default is two windows at the offered rate.
	if got := Defaults().retentionTarget(); got != 2000*time.Second {
		t.Errorf("default retention %s, want 2000s", got)
	}
}

// readings builds the start and end of a window: CPU seconds by group,
// WAL position, sizes, runs.
func readings(at time.Time, secs float64, cpu map[string][2]float64, wal [2]int64, runs []run) (*reading, *reading) {
	start := &reading{at: at, cpu: bench.CPUTimes{}, wal: wal[0]}
	end := &reading{at: at.Add(time.Duration(secs * float64(time.Second))), cpu: bench.CPUTimes{}, wal: wal[1],
		tables: map[string]Size{"ingest.outbox": {Total: 3e6, Heap: 2e6, Indexes: 1e6}}, runs: runs}
	pid := 1
	for group, t := range cpu {
		start.cpu[bench.Proc{Group: group, PID: pid}], end.cpu[bench.Proc{Group: group, PID: pid}] = t[0], t[1]
		pid++
	}
	return start, end
}

// Each minute's p99 comes out in the minutes' order, whatever order the
// rows came in, and the window's line shows the lowest and the highest.
func TestP99ByMinuteIsInTheMinutesOrder(t *testing.T) {
	got := byMinute(map[int64][]float64{29_000_007: {20, 10, 900}, 29_000_006: {5}, 29_000_008: {40, 30}})
	if want := []float64{5, 900, 40}; !slices.Equal(got, want) {
		t.Fatalf("p99 by minute %v, want %v", got, want)
	}
	w := Window{Index: 1, P99ByMinuteMs: got}
	if line := w.Line(1, nil); !strings.Contains(line, "(by minute 5-900; by hop -)") {
		t.Errorf("line %q does not show the minutes' lowest and highest p99", line)
	}
}

func TestNewWindowDividesByTheDocuments(t *testing.T) {
	began := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	start, end := readings(began.Add(10*time.Second), 20, map[string][2]float64{
		"ingest-1": {1, 3}, "postgres": {5, 6}, "bench": {0, 1}, "machine": {100, 110},
	}, [2]int64{1000, 1000 + 2000*5000}, []run{{seconds: 0.5, checked: 10}, {seconds: 90, audit: true}, {seconds: 1.5, checked: 30, failed: true}, {seconds: 30, audit: true}})
	// Two audits in the window took 9 s together, the sweep ran once
	// before it and not in it.
	start.phases = map[string]phaseTotal{"audit": {seconds: 4, count: 3}, "sweep": {seconds: 1, count: 3}}
	end.phases = map[string]phaseTotal{"audit": {seconds: 13, count: 5}, "sweep": {seconds: 1, count: 3}}
	// Ingest's session used 3 s of PostgreSQL's 4; the other second was
	// background work.
	start.cpu[bench.Proc{Group: "postgres", PID: 90}], end.cpu[bench.Proc{Group: "postgres", PID: 90}] = 1, 4
	end.roles = map[int]string{90: "onceflow_ingest"}
	w := newWindow(1, 2000, began, start, end, windowLatency{all: bench.NewSample(0, []float64{300, 100, 200}), byMinute: []float64{250, 300},
		hopP99: map[string]float64{"apply": 20, "deliver": 150, "emit": 130}})
	if got := w.PGCPUMsPerDocByRole; len(got) != 1 || math.Abs(got["onceflow_ingest"]-1.5) > 1e-9 {
		t.Errorf("PostgreSQL by role %v ms/doc, want onceflow_ingest 1.5", got)
	}
	if line := w.Line(2, nil); !strings.Contains(line, "CPU/doc 3.00 ms, the machine's 5.00 (") {
		t.Errorf("line %q lacks the machine's CPU a document", line)
	}
	if line := w.Line(2, nil); !strings.Contains(line, "; postgres by role (onceflow_ingest 1.50)") {
		t.Errorf("line %q lacks PostgreSQL by role", line)
	}
	// ingest 2 s, postgres 4 s over 2000 documents: 1 and 2 ms each.
	if w.CPUMsPerDoc["ingest-1"] != 1 || w.CPUMsPerDoc["postgres"] != 2 || w.CPUMsPerDocTotal != 3 {
		t.Errorf("CPU per document %v, total %v; want ingest-1 1, postgres 2, total 3 (bench and machine left out)", w.CPUMsPerDoc, w.CPUMsPerDocTotal)
	}
	if got := w.CPUMsPerDoc["other"]; math.Abs(got-1.5) > 1e-9 { // 10 s of machine, 7 s accounted for
		t.Errorf("other %v ms/doc, want 1.5", got)
	}
	if w.Index != 2 || w.Documents != 4000 || w.Seconds != 20 || w.Elapsed != 30 || w.WALBytesPerDoc != 5000 {
		t.Errorf("window %d, %d docs, %v s, elapsed %v s, WAL %v B/doc; want 2, 4000, 20, 30, 5000", w.Index, w.Documents, w.Seconds, w.Elapsed, w.WALBytesPerDoc)
	}
	if w.P50Ms != 200 || w.P99Ms != 300 {
		t.Errorf("p50 %v, p99 %v; want 200, 300", w.P50Ms, w.P99Ms)
	}
	if line := w.Line(2, nil); !strings.Contains(line, "p99 300 ms (by minute 250-300; by hop apply 20 / deliver 150 / emit 130)") {
		t.Errorf("line %q lacks the p99 by hop", line)
	}
	want := Runs{Count: 2, Failed: 1, MeanSeconds: 1, MedianSeconds: 0.5, MinSeconds: 0.5, MaxSeconds: 1.5, MeanChecked: 20, PhaseMeanSeconds: map[string]float64{"audit": 4.5}}
	if !reflect.DeepEqual(w.Reconciler, want) {
		t.Errorf("reconciler %+v, want %+v", w.Reconciler, want)
	}
	// The audits' runs are summed up apart, and the line shows them.
	if want := (Runs{Count: 2, MeanSeconds: 60, MedianSeconds: 30, MinSeconds: 30, MaxSeconds: 90}); !reflect.DeepEqual(w.Audits, want) {
		t.Errorf("audits %+v, want %+v", w.Audits, want)
	}
	if line := w.Line(2, nil); !strings.Contains(line, "; audit 2 runs (0 failed), mean 60.000 s, max 90.000 s") {
		t.Errorf("line %q lacks the audits' runs", line)
	}
}

// windowsOf makes n windows of 2000 documents 40 s apart, each with the
// figures f gives it.
func windowsOf(n int, f func(i int, w *Window)) []Window {
	out := make([]Window, n)
	for i := range out {
		out[i] = Window{Index: i + 1, Documents: (i + 1) * 2000, Seconds: 40, Elapsed: float64(i+1) * 40, Tables: map[string]Size{}}
		f(i, &out[i])
	}
	return out
}

func checkNamed(v Verdict, name string) Check {
	for _, c := range v.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{Name: "missing " + name}
}

func TestVerdictComparesTheLastWindowWithTheFirst(t *testing.T) {
	c := small()
	c.Retention = 20 * time.Second // the relay's outboxes can go from 25 s; judged from the first window ending after 65 s
	ws := windowsOf(3, func(i int, w *Window) {
		w.CPUMsPerDocTotal = []float64{40, 50, 45}[i]                           // +12.5 %: flat
		w.CPUMsPerDoc = map[string]float64{"machine": []float64{60, 62, 72}[i]} // +20 %: worse
		w.P99Ms = []float64{200, 210, 240}[i]                                   // +20 %: worse
		w.Tables["ingest.outbox"] = Size{Total: []int64{1e6, 2e6, 2.2e6}[i]}
		w.Tables["invoicer.outbox"] = Size{Total: []int64{1e6, 2e6, 3e6}[i]}
	})
	v := judge(c, ws)
	if v.OK {
		t.Error("verdict flat with p99 20 % worse")
	}
	if got := checkNamed(v, "cpu_ms_per_doc"); !got.Judged || !got.OK || got.Ratio != 45.0/40 {
		t.Errorf("CPU: %+v, want judged, ok, ratio 1.125", got)
	}
	if got := checkNamed(v, "machine_cpu_ms_per_doc"); !got.Judged || got.OK || got.Ratio != 72.0/60 {
		t.Errorf("machine CPU: %+v, want judged and failed, ratio 1.2", got)
	}
	if got := checkNamed(v, "p99_ms"); !got.Judged || got.OK {
		t.Errorf("p99: %+v, want judged and failed", got)
	}
	if got := checkNamed(v, "reconciler_mean_s"); got.Judged {
		t.Errorf("reconciler without runs: %+v, want not judged", got)
	}
	if got := checkNamed(v, "size ingest.outbox (MB)"); !got.Judged || !got.OK || got.First != 2 || got.Last != 2.2 {
		t.Errorf("ingest.outbox: %+v, want judged from window 2 (2 MB) to 2.2 MB, ok", got)
	}
	if got := checkNamed(v, "size invoicer.outbox (MB)"); !got.Judged || got.OK {
		t.Errorf("invoicer.outbox: %+v, want judged and failed (2 → 3 MB)", got)
	}
	if got := checkNamed(v, "size ingest.webhook_receipts (MB)"); got.Judged || !strings.Contains(got.Note, "INGEST_RECEIPT_RETENTION") {
		t.Errorf("receipts kept 24 h in a 2-minute run: %+v, want not judged, naming the setting", got)
	}
	if s := v.String(); !strings.Contains(s, "NOT flat") || !strings.Contains(s, "p99_ms") {
		t.Errorf("verdict text:\n%s", s)
	}

	// Everything within the tolerance, or better: flat.
	for i := range ws {
		ws[i].P99Ms, ws[i].Tables["invoicer.outbox"] = 200-float64(i), Size{Total: 2e6}
		ws[i].CPUMsPerDoc["machine"] = 60
		ws[i].Reconciler = Runs{Count: 4, MeanSeconds: 0.1}
	}
	if v := judge(c, ws); !v.OK || !strings.Contains(v.String(), "verdict: flat") {
		t.Errorf("flat run judged:\n%s", v)
	}
}

// The load generator's CPU a document stands beside the CPU checks as the
// machine's yardstick: listed with its figures, never judged, and each CPU
// check gives its ratio over it, without being excused by it.
func TestVerdictSetsTheLoadGeneratorBesideTheCPU(t *testing.T) {
	ws := windowsOf(3, func(i int, w *Window) {
		w.CPUMsPerDocTotal = []float64{8, 8.4, 9.6}[i] // +20 %
		w.CPUMsPerDoc = map[string]float64{"machine": []float64{9, 9.5, 10}[i], "bench": []float64{0.8, 0.8, 0.92}[i]}
	})
	v := judge(small(), ws)
	ys := checkNamed(v, "load_generator_cpu_ms_per_doc")
	if ys.Judged || ys.First != 0.8 || ys.Last != 0.92 || math.Abs(ys.Ratio-1.15) > 1e-9 {
		t.Errorf("yardstick %+v, want not judged, 0.8 → 0.92, ratio 1.15", ys)
	}
	if got := checkNamed(v, "cpu_ms_per_doc"); !got.Judged || got.OK || got.Note != "(1.04 over the load generator's)" {
		t.Errorf("CPU %+v, want judged and failed, 1.04 over the load generator's", got)
	}
	if got := checkNamed(v, "machine_cpu_ms_per_doc"); !got.Judged || !got.OK || got.Note != "(0.97 over the load generator's)" {
		t.Errorf("machine CPU %+v, want judged, ok, 0.97 over the load generator's", got)
	}
	if v.OK {
		t.Error("verdict flat with the pipeline's CPU 20 % worse: the yardstick excused it")
	}
	if s := v.String(); !strings.Contains(s, "load_generator_cpu_ms_per_doc            first 0.8, last 0.92, ratio 1.15: not judged") {
		t.Errorf("verdict text lacks the yardstick's figures:\n%s", s)
	}

	// A run without the load generator's reading (an older results.json)
	// lists the yardstick as not measured and notes nothing beside the CPU.
	for i := range ws {
		delete(ws[i].CPUMsPerDoc, "bench")
	}
	v = judge(small(), ws)
	if got := checkNamed(v, "load_generator_cpu_ms_per_doc"); got.Judged || got.Ratio != 0 {
		t.Errorf("yardstick without readings %+v, want not judged, no ratio", got)
	}
	if got := checkNamed(v, "cpu_ms_per_doc"); got.Note != "" {
		t.Errorf("CPU note %q without a yardstick, want none", got.Note)
	}
}

// The sweep is judged from the first window to begin once its runs have
// their steady work (the grace, the overlap and an interval: 60 s with a
// grace of 30 s and an overlap of 20 s in a run of 40 s windows reconciling
// every 10 s), not from the first. The soak's own grace of 2 minutes and
// the shipped 2-minute overlap make it 5 minutes with the default interval.
func TestVerdictJudgesTheReconcilerFromItsSteadyRuns(t *testing.T) {
	if got := Defaults().sweepSteady(); got != 5*time.Minute {
		t.Errorf("default run: the sweep steady after %s, want 5m", got)
	}
	c := small()
	c.Env = []string{"RECONCILER_GRACE=30s", "RECONCILER_SWEEP_OVERLAP=20s"}
	means := []float64{0.2, 1.0, 1.0, 1.1}
	ws := windowsOf(4, func(i int, w *Window) { w.Reconciler = Runs{Count: 4, MeanSeconds: means[i]} })
	got := checkNamed(judge(c, ws), "reconciler_mean_s")
	if !got.Judged || !got.OK || got.First != 1.0 || got.Last != 1.1 || !strings.Contains(got.Note, "window 3") {
		t.Errorf("ramp-up in window 1: %+v, want judged from window 3 (1.0 s) to 1.1 s, ok", got)
	}
	ws[3].Reconciler.MeanSeconds = 1.3
	if got := checkNamed(judge(c, ws), "reconciler_mean_s"); !got.Judged || got.OK {
		t.Errorf("30 %% slower than window 3: %+v, want judged and failed", got)
	}
	if got := checkNamed(judge(c, ws[:3]), "reconciler_mean_s"); got.Judged || !strings.Contains(got.Note, "1m0s") {
		t.Errorf("only the last window begins 60 s in: %+v, want not judged, naming 1m0s", got)
	}
}

// A recorded run is judged again by the settings its processes had (Env),
// not by the soak's defaults of today: a grace of 60 s and an overlap of
// 10 s recorded there make the sweep steady 80 s in, so from window 3,
// where today's 2-minute grace and overlap would judge no window of 40 s.
func TestRejudgeGoesByTheRunsOwnSettings(t *testing.T) {
	c := small()
	ws := windowsOf(4, func(i int, w *Window) {
		w.CPUMsPerDoc, w.CPUMsPerDocTotal, w.P50Ms, w.P99Ms = map[string]float64{"ingest-1": 8}, 8, 80, 300
		w.Reconciler = Runs{Count: 4, MeanSeconds: []float64{0.2, 0.5, 1.0, 1.1}[i]}
	})
	dir := t.TempDir()
	env := append(c.env(), "RECONCILER_GRACE=60s", "RECONCILER_SWEEP_OVERLAP=10s")
	if err := Write(dir, Results{Config: c, Env: env, Pruned: c.pruned(), Windows: ws}); err != nil {
		t.Fatal(err)
	}
	r, err := Rejudge(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkNamed(r.Verdict, "reconciler_mean_s"); !got.Judged || got.First != 1.0 || !strings.Contains(got.Note, "window 3") {
		t.Errorf("rejudged: %+v, want judged from window 3 (1.0 s)", got)
	}
	if !slices.Equal(r.Config.Env, c.Env) {
		t.Errorf("rejudging rewrote the run's -env %v to %v", c.Env, r.Config.Env)
	}
}

// A recorded run is judged again by the current method from its
// results.json alone, which keeps the settings the verdict goes by.
func TestRejudgeReadsTheRunBack(t *testing.T) {
	c := small()
	c.Env = []string{"RECONCILER_GRACE=30s", "RECONCILER_SWEEP_OVERLAP=20s"}
	means := []float64{0.2, 1.0, 1.0, 1.1}
	ws := windowsOf(4, func(i int, w *Window) {
		w.CPUMsPerDoc, w.CPUMsPerDocTotal, w.P50Ms, w.P99Ms = map[string]float64{"ingest-1": 8}, 8, 80, 300
		w.Reconciler = Runs{Count: 4, MeanSeconds: means[i]}
	})
	dir := t.TempDir()
	stale := Verdict{Tolerance: c.Tolerance} // as an older method left it: not flat
	if err := Write(dir, Results{Config: c, Env: c.env(), Pruned: c.pruned(), Windows: ws, Verdict: stale}); err != nil {
		t.Fatal(err)
	}
	r, err := Rejudge(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Config; got.Documents != c.Documents || got.Window != c.Window || got.Rate != c.Rate || got.reconcileEvery() != c.reconcileEvery() ||
		got.retentionTarget() != c.retentionTarget() || got.Timeout != c.Timeout || got.Tolerance != c.Tolerance || !slices.Equal(got.Env, c.Env) ||
		got.LatencySlice != SliceDocs || got.WALSample != WALSampleBytes {
		t.Errorf("settings read back %+v, want %+v", got, c)
	}
	if check := checkNamed(r.Verdict, "reconciler_mean_s"); !r.Verdict.OK || !strings.Contains(check.Note, "window 3") {
		t.Errorf("verdict %s; want flat, the sweep judged from window 3", r.Verdict)
	}
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil || !strings.Contains(string(b), "verdict: flat") {
		t.Errorf("README.md not rewritten with the new verdict (%v):\n%s", err, b)
	}
	if _, err := Rejudge(t.TempDir()); err == nil || !strings.Contains(err.Error(), "results.json") {
		t.Errorf("Rejudge of an empty directory: %v, want an error naming results.json", err)
	}
}

// A run recorded before the WAL sample's size was read 32 MB of each
// window's WAL, and before the slices read each window whole.
func TestOlderRunsReadBackWithTheirSample(t *testing.T) {
	var c Config
	if err := json.Unmarshal([]byte(`{"retention": "1m0s", "reconcile_every": "15s", "timeout": "5m0s"}`), &c); err != nil {
		t.Fatal(err)
	}
	if c.WALSample != 32<<20 || c.LatencySlice != 0 {
		t.Errorf("WAL sample %d bytes, latency slice %d; want 32 MB and 0", c.WALSample, c.LatencySlice)
	}
	if err := json.Unmarshal([]byte(`{"retention": "1m0s", "reconcile_every": "15s", "timeout": "5m0s", "wal_sample_bytes": 0}`), &c); err != nil || c.WALSample != 0 {
		t.Errorf("wal_sample_bytes 0 read back as %d (%v)", c.WALSample, err)
	}
}

func TestLineAndReadmeShowTheFigures(t *testing.T) {
	c := small()
	ws := windowsOf(3, func(i int, w *Window) {
		w.CPUMsPerDoc = map[string]float64{"ingest-1": 8.25, "postgres": 17.5, "machine": 60, "other": 3}
		w.CPUMsPerDocTotal, w.WALBytesPerDoc, w.FullPagesPerDoc, w.P50Ms, w.P99Ms = 25.75, 13258, 0.5, 83, 371
		w.HopP99Ms = map[string]float64{"apply": 12, "deliver": 200, "emit": 160}
		w.Tables["ingest.outbox"] = Size{Total: 1_600_000}
		w.Tables["invoicer.fiscal_documents"] = Size{Total: 2_000_000, Heap: 1_500_000, Indexes: 500_000, Live: 6000, Dead: 12}
		w.Reconciler = Runs{Count: 6, MeanSeconds: 0.093, MedianSeconds: 0.081, MinSeconds: 0.064, MaxSeconds: 0.151, PhaseMeanSeconds: map[string]float64{"sweep": 0.02, "audit": 0.07}}
	})
	line := ws[0].Line(3, prunedSet(c.pruned()))
	for _, want := range []string{"window 1/3 (2000 docs, 40.0 s)", "CPU/doc 25.75 ms, the machine's 60.00 (postgres 17.50, ingest-1 8.25);", "WAL 13258 B/doc (0.50 full pages)",
		"p50 83 ms, p99 371 ms", "tables 3.6 MB (pruned in the run 1.6 MB)", "reconciler 6 runs, mean 0.093 s (audit 0.070, sweep 0.020), median 0.081 s, min 0.064 s, max 0.151 s"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "machine 60") || strings.Contains(line, "other") {
		t.Errorf("line %q lists groups outside the pipeline among the busiest", line)
	}
	if got := ws[0].Sizes(1); got != "invoicer.fiscal_documents 2.0 MB (heap 1.5 MB, indexes 0.5 MB; 6000 rows, 12 dead)" {
		t.Errorf("largest table: %q", got)
	}
	if r := Readme(nil); !strings.Contains(r, "## Method") || !strings.Contains(r, "No soak has been recorded") {
		t.Errorf("README without a run:\n%s", r)
	}
	ws[0].WALSample = []bench.TableWAL{{Table: "ingest.outbox", Bytes: 1100}, {Table: "invoicer.fiscal_documents", Bytes: 2500, FPI: 10}}
	ws[2].WALSample = []bench.TableWAL{{Table: "invoicer.fiscal_documents", Bytes: 4100, FPI: 1600}, {Table: "ingest.outbox", Bytes: 1150, FPI: 40}}
	if got := walLine(ws[2].WALSample, 1); got != "invoicer.fiscal_documents 4100 B/doc (full pages 1600)" {
		t.Errorf("WAL line %q", got)
	}
	res := Results{Config: c, Pruned: c.pruned(), Windows: ws, Verdict: judge(c, ws), CPUs: 2, Autovacuum: "on"}
	r := Readme(&res)
	for _, want := range []string{"6000 documents in windows of 2000 at 50 payments/s", "PostgreSQL private (max_wal_size=16GB, checkpoint_timeout=15min, wal_compression=lz4; autovacuum on)", "; `-env` INVOICER_PROVIDER_RATE_LIMIT=0.", "| 3 | 6000 | 40 | 25.75 | 13258 | 0.50 | 83 | 371 | apply 12 / deliver 200 / emit 160 | 3.6 | 1.6 | 6 | 0.093 | 0.081 | 0.064 | 0.151 |", "verdict: flat",
		"| table | window 1 B/doc | full pages | window 3 B/doc | full pages |", "| invoicer.fiscal_documents | 2500 | 10 | 4100 | 1600 |", "| ingest.outbox | 1100 | 0 | 1150 | 40 |"} {
		if !strings.Contains(r, want) {
			t.Errorf("README lacks %q:\n%s", want, r)
		}
	}
	// A run recorded before the runs' median and fastest were says so.
	ws[2].Reconciler.MedianSeconds, ws[2].Reconciler.MinSeconds = 0, 0
	if r := Readme(&Results{Config: c, Windows: ws, Verdict: judge(c, ws)}); !strings.Contains(r, "| 6 | 0.093 | – | – | 0.151 |") {
		t.Errorf("README of a run without the runs' spread lacks \"| 6 | 0.093 | – | – | 0.151 |\":\n%s", r)
	}
	if line := ws[2].Line(3, nil); !strings.Contains(line, "mean 0.093 s (audit 0.070, sweep 0.020), median –, min –, max 0.151 s") {
		t.Errorf("line %q of a run without the runs' spread", line)
	}
	const whole = "read each window's latencies whole at its end"
	if strings.Contains(r, whole) {
		t.Errorf("README of a run read in slices says %q", whole)
	}
	res.Config.LatencySlice = 0
	if r := Readme(&res); !strings.Contains(r, whole) {
		t.Errorf("README of a run recorded before the slices lacks %q", whole)
	}
}

func TestWriteMakesJSONPlotsAndReadme(t *testing.T) {
	c := small()
	ws := windowsOf(3, func(i int, w *Window) {
		w.CPUMsPerDoc, w.CPUMsPerDocTotal, w.P50Ms, w.P99Ms = map[string]float64{"ingest-1": 8}, 8, 80, 300
		w.Tables["ingest.outbox"] = Size{Total: int64(i+1) * 1e6}
	})
	dir := t.TempDir()
	if err := Write(dir, Results{Config: c, Env: c.env(), Pruned: c.pruned(), Windows: ws, Verdict: judge(c, ws)}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Config  map[string]any `json:"config"`
		Pruned  []map[string]any
		Windows []Window `json:"windows"`
		Verdict Verdict  `json:"verdict"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Windows) != 3 || got.Windows[2].Tables["ingest.outbox"].Total != 3e6 || got.Config["retention"] != "1m20s" ||
		got.Pruned[0]["retention"] != "1m20s" || len(got.Verdict.Checks) == 0 {
		t.Errorf("results.json: %s", b)
	}
	for _, name := range append([]string{"README.md"}, Plots...) {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// soak/README.md, whether or not a run is recorded in it, opens with the
// method as the code writes it.
func TestCommittedReadmeHasTheMethod(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "soak", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), readmeIntro) {
		t.Error("soak/README.md does not open with readmeIntro: render it again (soak.Readme) after changing the method")
	}
}

func TestVerdictLeavesTablesThatKeepARowPerDocument(t *testing.T) {
	c := small()
	c.Documents = 600_000 // 3 h 20 min at 50/s: the attempts' 1 h retention acts, but each document keeps one
	long := windowsOf(300, func(i int, w *Window) {
		w.Elapsed = float64(i+1) * 40
		w.Tables["invoicer.emission_attempts"] = Size{Total: int64(i+1) * 1e6}
	})
	if got := checkNamed(judge(c, long), "size invoicer.emission_attempts (MB)"); got.Judged || !strings.Contains(got.Note, "last attempt") {
		t.Errorf("emission attempts: %+v, want not judged, as the last attempt of each document stays", got)
	}
}

// The phase and pass histograms are read from a real metrics page, as the
// reconciler's registry renders them: each phase's seconds and runs, the
// sweep's passes as phases of their own.
func TestReadPhasesFromTheMetricsPage(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: phaseMetric, Help: "phases"}, []string{"phase"})
	reg.MustRegister(h, prometheus.NewCounter(prometheus.CounterOpts{Name: "onceflow_other_total", Help: "other"}))
	h.WithLabelValues("audit").Observe(2.5)
	h.WithLabelValues("audit").Observe(1.5)
	h.WithLabelValues("sweep").Observe(0.25)
	passes := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: passMetric, Help: "passes"}, []string{"pass"})
	reg.MustRegister(passes)
	passes.WithLabelValues("recent").Observe(0.125)
	passes.WithLabelValues("full").Observe(0.0625)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	got, err := readPhases(t.Context(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]phaseTotal{"audit": {seconds: 4, count: 2}, "sweep": {seconds: 0.25, count: 1},
		"sweep.recent": {seconds: 0.125, count: 1}, "sweep.full": {seconds: 0.0625, count: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("phases %+v, want %+v", got, want)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	if _, err := readPhases(t.Context(), gone.URL); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("reading a page that answers 404: %v, want an error naming it", err)
	}
}

// The windows so far are saved after each, with the run's settings, so a
// run stopped hours in keeps them.
func TestPartialHoldsTheWindowsSoFar(t *testing.T) {
	c := small()
	c.Out = filepath.Join(t.TempDir(), "out")
	s := &soak{cfg: c, out: io.Discard, began: time.Now(), partial: Results{Config: c, Env: c.env()}}
	ws := windowsOf(3, func(i int, w *Window) { w.P99Ms = float64(100 * (i + 1)) })
	for n := 1; n <= len(ws); n++ {
		s.savePartial(ws[:n])
		b, err := os.ReadFile(filepath.Join(c.Out, PartialFile))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Config  map[string]any `json:"config"`
			Windows []Window       `json:"windows"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Windows) != n || got.Windows[n-1].P99Ms != float64(100*n) || got.Config["retention"] != "1m20s" {
			t.Fatalf("after window %d, %s holds %s", n, PartialFile, b)
		}
	}
}

// A soak whose first window keeps more than three quarters of the cores
// busy says so, with a rate that would leave a third of them free.
func TestHeadroomNamesTheRateTheMachineCarries(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		msPerDoc   float64
		rate, cpus int
		want       string // in the line; "" for no line
	}{
		{8.26, 150, 2, ""}, // 1.24 of 2 cores
		{12.79, 150, 2, "kept 1.92 of 2 cores busy at 150/s"},           // this machine kind's window 1
		{12.79, 150, 2, "about -rate 104 would"},                        // 2/3 × 2 cores / 12.79 ms
		{12.79, 150, 2, "1000000 documents take 2h40m0s or more there"}, // 1,000,000 / 104 s
		{12.79, 150, 8, ""},
		{0, 150, 2, ""}, // no reading of the machine
	} {
		got := headroom(c.msPerDoc, c.rate, c.cpus, 1_000_000)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("headroom(%.2f ms, %d/s, %d cores) = %q, want %q", c.msPerDoc, c.rate, c.cpus, got, c.want)
		}
	}
}

func TestReconcilerPlotDrawsTheSpreadWhenRecorded(t *testing.T) {
	names := func(ws []Window) []string {
		var out []string
		for _, s := range reconcilerLines(ws) {
			out = append(out, s.name)
		}
		return out
	}
	recorded := windowsOf(2, func(i int, w *Window) {
		w.Reconciler = Runs{Count: 10, MeanSeconds: 0.5, MaxSeconds: 2, MedianSeconds: 0.45, MinSeconds: 0.3,
			PhaseMeanSeconds: map[string]float64{"sweep": 0.4, "audit": 30}}
	})
	if got, want := names(recorded), []string{"mean", "max", "median", "fastest", "sweep (mean)"}; !slices.Equal(got, want) {
		t.Errorf("lines of a run that kept the spread: %v, want %v (the audit's runs are apart)", got, want)
	}
	if got := reconcilerLines(recorded)[3].y(recorded[1]); got != 0.3 {
		t.Errorf("fastest line at window 2: %v, want 0.3", got)
	}
	before := windowsOf(2, func(i int, w *Window) { w.Reconciler = Runs{Count: 10, MeanSeconds: 0.5, MaxSeconds: 2} })
	if got, want := names(before), []string{"mean", "max"}; !slices.Equal(got, want) {
		t.Errorf("lines of a run recorded before the spread: %v, want %v (no line at 0)", got, want)
	}
}
