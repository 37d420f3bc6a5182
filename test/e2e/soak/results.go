package soak

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/test/e2e/bench"
)

// Window is one window's figures. CPU and WAL are per document of the
// window; sizes and documents are as at its end.
type Window struct {
	Index     int     `json:"window"`    // from 1
	Documents int     `json:"documents"` // authorized so far, this window's included
	Seconds   float64 `json:"seconds"`   // from the last window's end to this one's
	Elapsed   float64 `json:"elapsed_s"` // from the first payment to this window's end
	// CPUMsPerDoc is CPU milliseconds per document by process group (as
	// package bench groups them: each service instance, each sandbox,
	// postgres, sqs, the harness "bench", the kernel's page "reclaim"
	// threads, the whole "machine" and the "other" work on it).
	CPUMsPerDoc map[string]float64 `json:"cpu_ms_per_doc"`
	// CPUMsPerDocTotal adds the groups that do the pipeline's work: every
	// service and sandbox, PostgreSQL and SQS (not the harness, not the
	// kernel's reclaim, not other).
	CPUMsPerDocTotal float64 `json:"cpu_ms_per_doc_total"`
	// PGCPUMsPerDocByRole splits PostgreSQL's CPU a document by the role
	// of the session that used it (each service connects as its own on the
	// private cluster; the harness as postgres); the rest of the postgres
	// group is background work and sessions that ended.
	PGCPUMsPerDocByRole map[string]float64 `json:"postgres_cpu_ms_per_doc_by_role,omitempty"`
	WALBytesPerDoc      float64            `json:"wal_bytes_per_doc"`
	// FullPagesPerDoc is the full-page images the WAL took a document:
	// pages written whole because the checkpoint before had not seen them
	// changed (pg_stat_wal's wal_fpi).
	FullPagesPerDoc float64 `json:"wal_full_pages_per_doc"`
	P50Ms           float64 `json:"p50_ms"`
	P99Ms           float64 `json:"p99_ms"`
	// P99ByMinuteMs is the p99 of the documents whose payments were
	// received in each minute of the window, in order: a periodic stall
	// shows as a few bad minutes among good ones.
	P99ByMinuteMs []float64 `json:"p99_by_minute_ms"`
	// HopP99Ms is each hop's p99 (Hops), to tell which leg a change of
	// p99 comes from.
	HopP99Ms map[string]float64 `json:"hop_p99_ms,omitempty"`
	Tables   map[string]Size    `json:"tables"`
	// WALSample is where the window's WAL went, by table, per document,
	// read with pg_walinspect from the last Config.WALSample bytes of it (reading
	// all of it would take minutes of the server's CPU); absent when the
	// server has no pg_walinspect.
	WALSample []bench.TableWAL `json:"wal_by_table_sample,omitempty"`
	// Reconciler is the runs of the sweep and the detectors, which the
	// verdict judges; Audits the audits' runs, apart, which list what the
	// day holds and so may grow with it.
	Reconciler Runs `json:"reconciler"`
	Audits     Runs `json:"audit_runs"`
	// Minutes are the minutes the window's payments were received in,
	// each with its p99 and what the server did in it (stalls.go).
	Minutes []Minute `json:"minutes,omitempty"`
}

// Runs sums up the reconciler's runs that finished in a window.
type Runs struct {
	Count       int     `json:"runs"`
	Failed      int     `json:"failed"`
	MeanSeconds float64 `json:"mean_s"`
	MaxSeconds  float64 `json:"max_s"`
	// MedianSeconds and MinSeconds show the runs' spread: runs of the
	// same work take longer as other work contends with them, so the
	// mean moves with one slow run and the fastest run tells what the
	// work itself costs. Zero in a run recorded before they were.
	MedianSeconds float64 `json:"median_s,omitempty"`
	MinSeconds    float64 `json:"min_s,omitempty"`
	MeanChecked   float64 `json:"mean_checked"` // payments and refunds a run checked
	// PhaseMeanSeconds is each phase's mean time over the window's runs
	// (sweep, detectors, audit, from the reconciler's
	// onceflow_reconciler_phase_duration_seconds).
	PhaseMeanSeconds map[string]float64 `json:"phase_mean_s,omitempty"`
}

// notPipeline are the CPU groups CPUMsPerDocTotal leaves out.
var notPipeline = map[string]bool{"machine": true, "other": true, "bench": true, "reclaim": true}

// newWindow computes window k's figures (k from 0) from the readings at its
// start and end, for docs documents, and its latencies.
func newWindow(k, docs int, began time.Time, start, end *reading, lat windowLatency) Window {
	secs := end.at.Sub(start.at).Seconds()
	w := Window{Index: k + 1, Documents: (k + 1) * docs, Seconds: secs, Elapsed: end.at.Sub(began).Seconds(),
		CPUMsPerDoc: map[string]float64{}, WALBytesPerDoc: float64(end.wal-start.wal) / float64(docs),
		FullPagesPerDoc: float64(end.fullPages-start.fullPages) / float64(docs),
		P50Ms:           lat.all.Quantile(0.5), P99Ms: lat.all.Quantile(0.99), P99ByMinuteMs: lat.byMinute,
		HopP99Ms: lat.hopP99, Tables: end.tables}
	var sweeps, audits []run
	for _, r := range end.runs {
		if r.audit {
			audits = append(audits, r)
		} else {
			sweeps = append(sweeps, r)
		}
	}
	w.Reconciler, w.Audits = summarize(sweeps), summarize(audits)
	w.Reconciler.PhaseMeanSeconds = phaseMeans(start.phases, end.phases)
	for role, used := range bench.PGByRole(start.cpu, end.cpu, end.roles) {
		if w.PGCPUMsPerDocByRole == nil {
			w.PGCPUMsPerDocByRole = map[string]float64{}
		}
		w.PGCPUMsPerDocByRole[role] = used * 1000 / float64(docs)
	}
	for group, cores := range bench.Cores(start.cpu, end.cpu, secs) {
		ms := cores * secs * 1000 / float64(docs)
		w.CPUMsPerDoc[group] = ms
		if !notPipeline[group] {
			w.CPUMsPerDocTotal += ms
		}
	}
	return w
}

// summarize sums up runs.
func summarize(runs []run) Runs {
	out := Runs{Count: len(runs)}
	if len(runs) == 0 {
		return out
	}
	var secs, checked float64
	each := make([]float64, len(runs))
	for i, r := range runs {
		secs += r.seconds
		checked += float64(r.checked)
		each[i] = r.seconds
		if r.failed {
			out.Failed++
		}
	}
	out.MeanSeconds, out.MeanChecked = secs/float64(len(runs)), checked/float64(len(runs))
	out.MinSeconds, out.MaxSeconds = slices.Min(each), slices.Max(each)
	out.MedianSeconds = bench.NewSample(0, each).Quantile(0.5)
	return out
}

// spreadOf is the runs' median and fastest, "median 0.450 s, min 0.310 s",
// or "median –, min –" for a run recorded before they were.
func (r Runs) spreadOf() string {
	if !r.spreadKept() {
		return "median –, min –"
	}
	return fmt.Sprintf("median %.3f s, min %.3f s", r.MedianSeconds, r.MinSeconds)
}

// spreadCells is the runs' median and fastest as two table cells.
func (r Runs) spreadCells() string {
	if !r.spreadKept() {
		return "– | –"
	}
	return fmt.Sprintf("%.3f | %.3f", r.MedianSeconds, r.MinSeconds)
}

// spreadKept says whether the median and the fastest run were recorded:
// a run recorded before them has runs but neither.
func (r Runs) spreadKept() bool {
	return r.Count == 0 || r.MinSeconds > 0 || r.MedianSeconds > 0
}

// total is the window's tables' total size, and that of the tables named.
func (w Window) total(names map[string]bool) (all, some int64) {
	for name, s := range w.Tables {
		all += s.Total
		if names[name] {
			some += s.Total
		}
	}
	return all, some
}

// Line is the window's one-line summary: CPU per document (the busiest
// groups), WAL per document, latency, table sizes (all, and those pruned
// in the run, named by pruned), the reconciler's runs, the audits' apart.
func (w Window) Line(windows int, pruned map[string]bool) string {
	all, kept := w.total(pruned)
	return fmt.Sprintf("window %d/%d (%d docs, %.1f s): CPU/doc %.2f ms, the machine's %.2f (%s)%s; WAL %.0f B/doc (%.2f full pages); p50 %.0f ms, p99 %.0f ms (by minute %s; by hop %s); tables %s (pruned in the run %s); reconciler %d runs, mean %.3f s (%s), %s, max %.3f s",
		w.Index, windows, w.Documents, w.Seconds, w.CPUMsPerDocTotal, w.CPUMsPerDoc["machine"], busiest(w.CPUMsPerDoc, 5), w.byRole(), w.WALBytesPerDoc, w.FullPagesPerDoc,
		w.P50Ms, w.P99Ms, spread(w.P99ByMinuteMs), w.hops(), megabytes(all), megabytes(kept), w.Reconciler.Count, w.Reconciler.MeanSeconds,
		w.Reconciler.phases(), w.Reconciler.spreadOf(), w.Reconciler.MaxSeconds) + w.audits()
}

// hops renders the p99 of each hop the window has, "apply 12 / deliver 30
// / publish 20 / emit 50" (ms), or "-" for a run recorded before hops were.
func (w Window) hops() string {
	if len(w.HopP99Ms) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(Hops))
	for _, name := range Hops {
		if ms, ok := w.HopP99Ms[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f", name, ms))
		}
	}
	return strings.Join(parts, " / ")
}

// walLine lists the n tables that wrote most WAL a document, each with
// the full-page images among its bytes.
func walLine(tables []bench.TableWAL, n int) string {
	parts := make([]string, 0, n)
	for _, t := range tables[:min(n, len(tables))] {
		parts = append(parts, fmt.Sprintf("%s %.0f B/doc (full pages %.0f)", t.Table, t.Bytes, t.FPI))
	}
	return strings.Join(parts, ", ")
}

// audits renders the audits' runs, when there were any.
func (w Window) audits() string {
	if w.Audits.Count == 0 {
		return ""
	}
	return fmt.Sprintf("; audit %d runs (%d failed), mean %.3f s, max %.3f s", w.Audits.Count, w.Audits.Failed, w.Audits.MeanSeconds, w.Audits.MaxSeconds)
}

// byRole renders PostgreSQL's CPU a document by role, when it was split.
func (w Window) byRole() string {
	if len(w.PGCPUMsPerDocByRole) == 0 {
		return ""
	}
	return "; postgres by role (" + busiest(w.PGCPUMsPerDocByRole, 5) + ")"
}

// spread is the lowest and highest of ms, or "-" when there is none.
func spread(ms []float64) string {
	if len(ms) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f-%.0f", slices.Min(ms), slices.Max(ms))
}

// phases renders the mean time of each phase, in seconds, by name.
func (r Runs) phases() string {
	if len(r.PhaseMeanSeconds) == 0 {
		return "no phase timed"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(r.PhaseMeanSeconds)) {
		parts = append(parts, fmt.Sprintf("%s %.3f", name, r.PhaseMeanSeconds[name]))
	}
	return strings.Join(parts, ", ")
}

// Sizes is a line of the window's n largest tables, with their indexes and
// rows.
func (w Window) Sizes(n int) string {
	names := slices.Sorted(maps.Keys(w.Tables))
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(w.Tables[b].Total, w.Tables[a].Total) })
	parts := make([]string, 0, n)
	for _, name := range names[:min(n, len(names))] {
		s := w.Tables[name]
		parts = append(parts, fmt.Sprintf("%s %s (heap %s, indexes %s; %d rows, %d dead)", name, megabytes(s.Total), megabytes(s.Heap), megabytes(s.Indexes), s.Live, s.Dead))
	}
	return strings.Join(parts, ", ")
}

// busiest lists the n groups of the pipeline with the most CPU per
// document, busiest first.
func busiest(ms map[string]float64, n int) string {
	var names []string
	for name := range ms {
		if !notPipeline[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(ms[b], ms[a]) })
	parts := make([]string, 0, n)
	for _, name := range names[:min(n, len(names))] {
		parts = append(parts, fmt.Sprintf("%s %.2f", name, ms[name]))
	}
	return strings.Join(parts, ", ")
}

func megabytes(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }

// Check is one flatness check of the verdict: a figure of the first (or
// reference) window beside the last's; sizes in MB.
type Check struct {
	Name   string  `json:"name"`
	First  float64 `json:"first"`
	Last   float64 `json:"last"`
	Ratio  float64 `json:"ratio"`  // last / first
	Judged bool    `json:"judged"` // false: the run cannot tell (see Note)
	OK     bool    `json:"ok"`     // judged and at most 1 + tolerance
	Note   string  `json:"note,omitempty"`
}

// check compares last with first against the tolerance; a first of 0
// cannot be compared.
func check(name string, first, last, tolerance float64) Check {
	c := Check{Name: name, First: first, Last: last}
	if first <= 0 {
		c.Note = "nothing to compare with in the first window"
		return c
	}
	c.Ratio, c.Judged = last/first, true
	c.OK = c.Ratio <= 1+tolerance
	return c
}

// Verdict compares the last window with the first: CPU per document (the
// pipeline's sum, and the machine's busy time, which also holds what the
// sum cannot see) and p99 may be at most Tolerance worse, and so may the reconciler's mean run
// time from the first window whose runs have their steady work; each
// pruned table whose retention acted in the run, from the first window
// that ended a window after its first rows could go, may have grown at
// most Tolerance by the last. A figure that fell passes: only getting
// worse fails a soak. The load generator's CPU a document (yardstick) is
// listed beside, not judged.
type Verdict struct {
	Tolerance float64 `json:"tolerance"`
	Checks    []Check `json:"checks"`
	OK        bool    `json:"ok"` // every judged check passed
}

// judge computes the verdict of windows (at least two) run with cfg.
func judge(cfg Config, windows []Window) Verdict {
	first, last := windows[0], windows[len(windows)-1]
	tol := cfg.Tolerance
	ys := yardstick(first, last)
	checks := []Check{
		beside(check("cpu_ms_per_doc", first.CPUMsPerDocTotal, last.CPUMsPerDocTotal, tol), ys),
		beside(check("machine_cpu_ms_per_doc", first.CPUMsPerDoc["machine"], last.CPUMsPerDoc["machine"], tol), ys),
		ys,
		check("p99_ms", first.P99Ms, last.P99Ms, tol),
		reconcilerCheck(cfg, windows, tol),
	}
	for _, p := range cfg.pruned() {
		checks = append(checks, sizeCheck(p, cfg.WindowTime(), windows, tol))
	}
	v := Verdict{Tolerance: tol, Checks: checks, OK: true}
	for _, c := range checks {
		if c.Judged && !c.OK {
			v.OK = false
		}
	}
	return v
}

// yardstick is the load generator's CPU a document, the last window's
// against the first's, not judged. Its work a document is fixed (it offers
// each payment, reads each latency once and samples the server once a
// second at a fixed rate), so it moves only with the machine's speed,
// which moves all its processes at once: a busier host, the memory the
// kernel's reclaim scans. Set beside the CPU checks, it tells the
// machine's part of their change from onceflow's.
func yardstick(first, last Window) Check {
	c := check("load_generator_cpu_ms_per_doc", first.CPUMsPerDoc["bench"], last.CPUMsPerDoc["bench"], 0)
	c.OK = false
	if c.Judged {
		c.Judged, c.Note = false, "not judged: its work a document is fixed, so it moves only with the machine's speed"
	}
	return c
}

// beside notes c's ratio over the yardstick's, when both were measured.
func beside(c, ys Check) Check {
	if c.Judged && ys.Ratio > 0 {
		c.Note = fmt.Sprintf("(%.2f over the load generator's)", c.Ratio/ys.Ratio)
	}
	return c
}

// reconcilerCheck compares the sweep's mean run time at the last window
// with that of the first window to begin once its runs have their steady
// work (Config.sweepSteady): the runs before find fewer payments past the
// grace, and a window holding them would make any later one look slower.
func reconcilerCheck(cfg Config, windows []Window, tol float64) Check {
	const name = "reconciler_mean_s"
	steady := cfg.sweepSteady()
	last := windows[len(windows)-1]
	began := 0.0
	for _, w := range windows[:len(windows)-1] {
		if began >= steady.Seconds() {
			c := check(name, w.Reconciler.MeanSeconds, last.Reconciler.MeanSeconds, tol)
			if c.Judged {
				c.Note = fmt.Sprintf("from window %d, the first to begin %s after the first payment", w.Index, steady)
			}
			return c
		}
		began = w.Elapsed
	}
	return Check{Name: name, Note: fmt.Sprintf("not judged: no window before the last begins %s after the first payment (the sweep's grace, its overlap and an interval)", steady)}
}

// sizeCheck compares a pruned table's size at the last window with that at
// the first window to end a window's time after the table's first rows
// could be pruned (retention plus the pruner's interval).
func sizeCheck(p Pruned, window time.Duration, windows []Window, tol float64) Check {
	name := "size " + p.Table + " (MB)"
	if p.Keeps != "" {
		return Check{Name: name, Note: fmt.Sprintf("not judged: kept for good, %s, so it grows with the documents", p.Keeps)}
	}
	from := (p.Retention + p.Interval + window).Seconds()
	for _, w := range windows[:len(windows)-1] {
		if w.Elapsed >= from {
			c := check(name, float64(w.Tables[p.Table].Total)/1e6, float64(windows[len(windows)-1].Tables[p.Table].Total)/1e6, tol)
			c.Note = fmt.Sprintf("from window %d (%s %s)", w.Index, p.Setting, p.Retention)
			if c.First == 0 {
				c.Judged, c.OK, c.Note = false, false, "the table stayed empty"
			}
			return c
		}
	}
	return Check{Name: name, Note: fmt.Sprintf("not judged: %s %s does not act a window before the run ends", p.Setting, p.Retention)}
}

// String is the verdict as lines, one a check.
func (v Verdict) String() string {
	var b strings.Builder
	for _, c := range v.Checks {
		switch {
		case !c.Judged && c.Ratio > 0:
			fmt.Fprintf(&b, "  %-40s first %.4g, last %.4g, ratio %.2f: %s\n", c.Name, c.First, c.Last, c.Ratio, c.Note)
		case !c.Judged:
			fmt.Fprintf(&b, "  %-40s -: %s\n", c.Name, c.Note)
		default:
			mark := "ok"
			if !c.OK {
				mark = fmt.Sprintf("WORSE than +%.0f %%", v.Tolerance*100)
			}
			fmt.Fprintf(&b, "  %-40s first %.4g, last %.4g, ratio %.2f: %s %s\n", c.Name, c.First, c.Last, c.Ratio, mark, c.Note)
		}
	}
	verdict := "flat"
	if !v.OK {
		verdict = "NOT flat"
	}
	fmt.Fprintf(&b, "  verdict: %s (tolerance %.0f %%)", verdict, v.Tolerance*100)
	return b.String()
}

// Results are one soak's figures, written to results.json.
type Results struct {
	Config Config   `json:"config"`
	Env    []string `json:"env"` // the settings the soak gave every process
	Pruned []Pruned `json:"pruned"`
	// Autovacuum is the server's setting: "off" leaves every pruned row's
	// space unused, so the size checks say nothing of the retention.
	Autovacuum string    `json:"autovacuum"`
	StartedAt  time.Time `json:"started_at"`
	CPUs       int       `json:"cpus"`
	Windows    []Window  `json:"windows"`
	Verdict    Verdict   `json:"verdict"`
}

// UnmarshalJSON reads the settings back as MarshalJSON wrote them (the
// retention and interval as the run resolved them); Out is not recorded.
func (c *Config) UnmarshalJSON(b []byte) error {
	var raw struct {
		Documents, Window, Rate int
		Retention, Timeout      string
		ReconcileEvery          string   `json:"reconcile_every"`
		PG                      string   `json:"pg"`
		PGSettings              []string `json:"pg_settings"`
		Tolerance               float64
		Env                     []string
		LatencySlice            int  `json:"latency_slice"`
		WALSample               *int `json:"wal_sample_bytes"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*c = Config{Documents: raw.Documents, Window: raw.Window, Rate: raw.Rate, PG: raw.PG, PGSettings: raw.PGSettings,
		Tolerance: raw.Tolerance, Env: raw.Env, LatencySlice: raw.LatencySlice, WALSample: 32 << 20}
	if raw.WALSample != nil { // else recorded before the size was: 32 MB
		c.WALSample = *raw.WALSample
	}
	for _, d := range []struct {
		name, value string
		to          *time.Duration
	}{{"retention", raw.Retention, &c.Retention}, {"reconcile_every", raw.ReconcileEvery, &c.ReconcileEvery}, {"timeout", raw.Timeout, &c.Timeout}} {
		v, err := time.ParseDuration(d.value)
		if err != nil {
			return fmt.Errorf("config %s: %w", d.name, err)
		}
		*d.to = v
	}
	return nil
}

// MarshalJSON records the settings with readable durations.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"documents": c.Documents, "window": c.Window, "rate": c.Rate, "retention": c.retentionTarget().String(),
		"reconcile_every": c.reconcileEvery().String(), "pg": c.PG, "pg_settings": c.PGSettings, "tolerance": c.Tolerance, "timeout": c.Timeout.String(), "env": c.Env,
		"latency_slice": c.LatencySlice, "wal_sample_bytes": c.WALSample,
	})
}

// MarshalJSON records the durations readably.
func (p Pruned) MarshalJSON() ([]byte, error) {
	type plain Pruned
	return json.Marshal(struct {
		plain
		Retention string `json:"retention"`
		Interval  string `json:"interval"`
	}{plain(p), p.Retention.String(), p.Interval.String()})
}
