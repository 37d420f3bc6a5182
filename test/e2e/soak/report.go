package soak

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/onceflow/onceflow/test/e2e/bench"
)

// Plots are the pictures Write draws, by file name.
var Plots = []string{"cpu_per_doc.png", "latency.png", "table_sizes.png", "reconciler.png"}

// Write saves results.json, the plots and README.md into dir, creating it.
func Write(dir string, r Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := jsonIndent(r)
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		return err
	}
	pruned := prunedSet(r.Pruned)
	draw := []func(string, []Window) error{plotCPU, plotLatency,
		func(path string, ws []Window) error { return plotSizes(path, ws, pruned) }, plotReconciler}
	for i, name := range Plots {
		if err := draw[i](filepath.Join(dir, name), r.Windows); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(Readme(&r)), 0o644)
}

// Rejudge reads dir's results.json and writes it, its plots and README.md
// again, judged by the current method: a run recorded before the method
// changed need not run again.
func Rejudge(dir string) (Results, error) {
	var r Results
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s/results.json: %w", dir, err)
	}
	if len(r.Windows) < 2 {
		return r, fmt.Errorf("%s/results.json holds %d windows; a verdict needs two", dir, len(r.Windows))
	}
	r.Config.Out = dir
	c := r.Config
	if len(r.Env) > 0 { // the settings its processes had, the soak's own of its day included
		c.Env = r.Env
	}
	r.Pruned, r.Verdict = c.pruned(), judge(c, r.Windows)
	return r, Write(dir, r)
}

// series is one line of a plot: a value per window.
type series struct {
	name string
	y    func(Window) float64
}

// linePlot draws each series against the documents authorized so far.
func linePlot(path, title, ylabel string, windows []Window, lines []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "documents authorized"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	for i, s := range lines {
		xys := make(plotter.XYs, len(windows))
		for j, w := range windows {
			xys[j] = plotter.XY{X: float64(w.Documents), Y: s.y(w)}
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("%s: %w", title, err)
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		l.Dashes, pts.Shape = plotutil.Dashes(i), plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	p.Y.Max *= 1.4 // room for the legend above the lines
	return bench.SavePNG(p, path)
}

// plotCPU draws CPU per document: the pipeline's total and its five
// busiest groups over the run.
func plotCPU(path string, windows []Window) error {
	lines := []series{{"total", func(w Window) float64 { return w.CPUMsPerDocTotal }}}
	pipeline := func(w Window) map[string]float64 {
		out := maps.Clone(w.CPUMsPerDoc)
		maps.DeleteFunc(out, func(g string, _ float64) bool { return notPipeline[g] })
		return out
	}
	for _, g := range topKeys(windows, 5, pipeline) {
		lines = append(lines, series{g, func(w Window) float64 { return w.CPUMsPerDoc[g] }})
	}
	return linePlot(path, "CPU per document, by process (window by window)", "CPU ms per document", windows, lines)
}

// plotLatency draws each window's end-to-end p50 and p99, and the p99 of
// each hop the run recorded.
func plotLatency(path string, windows []Window) error {
	lines := []series{{"p50", func(w Window) float64 { return w.P50Ms }}, {"p99", func(w Window) float64 { return w.P99Ms }}}
	for _, hop := range Hops {
		if slices.ContainsFunc(windows, func(w Window) bool { _, ok := w.HopP99Ms[hop]; return ok }) {
			lines = append(lines, series{"p99 " + hop, func(w Window) float64 { return w.HopP99Ms[hop] }})
		}
	}
	return linePlot(path, "webhook accepted → invoice authorized (window by window)", "latency (ms)", windows, lines)
}

// plotReconciler draws the reconciler's run time in each window
// (reconcilerLines).
func plotReconciler(path string, windows []Window) error {
	return linePlot(path, "the reconciler's run time (runs finished in each window)", "seconds", windows, reconcilerLines(windows))
}

// auditPhase is the audit's phase: its runs are apart (Window.Audits), and
// they list what the day holds, tens of seconds or more against the sweep's
// fractions of one, which would flatten the judged runs' lines.
const auditPhase = "audit"

// reconcilerLines are the mean and longest run time of the reconciler's
// runs in each window, their median and fastest when the run recorded
// them, and the mean time of each phase but the audit's.
func reconcilerLines(windows []Window) []series {
	lines := []series{
		{"mean", func(w Window) float64 { return w.Reconciler.MeanSeconds }}, {"max", func(w Window) float64 { return w.Reconciler.MaxSeconds }},
	}
	if slices.ContainsFunc(windows, func(w Window) bool { return w.Reconciler.Count > 0 && w.Reconciler.spreadKept() }) {
		lines = append(lines, series{"median", func(w Window) float64 { return w.Reconciler.MedianSeconds }},
			series{"fastest", func(w Window) float64 { return w.Reconciler.MinSeconds }})
	}
	names := map[string]bool{}
	for _, w := range windows {
		for name := range w.Reconciler.PhaseMeanSeconds {
			names[name] = true
		}
	}
	delete(names, auditPhase)
	for _, name := range slices.Sorted(maps.Keys(names)) {
		lines = append(lines, series{name + " (mean)", func(w Window) float64 { return w.Reconciler.PhaseMeanSeconds[name] }})
	}
	return lines
}

// plotSizes draws the six largest tables' sizes (indexes included) at the
// end of each window, and the sum of those pruned in the run.
func plotSizes(path string, windows []Window, pruned map[string]bool) error {
	lines := []series{{"tables pruned in the run (sum)", func(w Window) float64 { _, kept := w.total(pruned); return float64(kept) / 1e6 }}}
	sizes := func(w Window) map[string]float64 {
		out := map[string]float64{}
		for name, s := range w.Tables {
			out[name] = float64(s.Total)
		}
		return out
	}
	for _, name := range topKeys(windows, 6, sizes) {
		lines = append(lines, series{name, func(w Window) float64 { return float64(w.Tables[name].Total) / 1e6 }})
	}
	return linePlot(path, "table sizes with their indexes (end of each window)", "MB", windows, lines)
}

// topKeys are the n keys with the largest value at the peak over the
// windows, largest first.
func topKeys(windows []Window, n int, values func(Window) map[string]float64) []string {
	peak := map[string]float64{}
	for _, w := range windows {
		for k, v := range values(w) {
			peak[k] = max(peak[k], v)
		}
	}
	keys := slices.Sorted(maps.Keys(peak))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(peak[b], peak[a]) })
	return keys[:min(n, len(keys))]
}

// readmeIntro is the fixed part of soak/README.md: the method. The figures
// after it come from the run.
const readmeIntro = `# Soak

<!-- Written by the soak (test/e2e/soak/report.go) with results.json: edit the code, not this file. -->

` + "`make soak`" + ` runs the whole pipeline (package stack: both sandboxes, ingest, relay, invoicer
and the reconciler serving, on a PostgreSQL cluster of its own and its own queues in the
SQS emulator ` + "`make test`" + ` uses) at a steady rate for many
documents and measures it window by window (` + "`-window`" + ` documents each), to show that it
holds up over time: the last window should cost as much per document as the first, the
pruned tables should stop growing and the reconciler should take as long.

    make soak                                   # 1,000,000 documents, windows of 100,000, 100/s
    make soak ARGS="-documents 6000 -window 2000 -rate 50 -retention 20s"   # a few minutes
    make soak-readme                            # judge soak/results.json again after the method changed

` + "`go run ./test/e2e/cmd/soak -help`" + ` lists the flags. It prints a line per window and the verdict,
and writes ` + "`results.json`" + `, ` + "`cpu_per_doc.png`" + `, ` + "`latency.png`" + `, ` + "`table_sizes.png`" + `,
` + "`reconciler.png`" + ` and this page into ` + "`-out`" + ` (default ` + "`soak`" + `); it exits 1 when the verdict is not flat.

## Method

- **Load.** Payment *i* is offered at *i*/rate seconds from the start, whatever the answers
  take (an open loop, package bench's ` + "`Paced`" + `): its order at ingest, then the payment at the
  PSP sandbox, which sends the PAID webhook. The invoicer's limit on provider calls is lifted,
  as in the bench. Any failed call stops the run.
- **Windows.** Window *k* is payments *kW* to *(k+1)W − 1* by their order ids. The soak
  reads it in slices of 5,000 payments as the run goes: once a slice's payments are all
  offered, it polls once a second until each has an authorized invoice (` + "`-timeout`" + ` bounds the
  wait), then reads their latencies. Its reads use one core, no JIT, and find rows by key
  (no parallel workers, no hash or merge joins), so they cost as much at the millionth
  document as at the first and never stall the pipeline they measure (read whole at a
  window's end, a window's join once took both cores for 10 s). A window ends with its last
  slice. At each end the soak reads the table sizes
  (` + "`pg_total_relation_size`" + `, ` + "`pg_relation_size`" + `, ` + "`pg_indexes_size`" + ` of every table of
  the four schemas, with its live and dead rows from ` + "`pg_stat_user_tables`" + `), the reconciler's runs finished since the last end (` + "`reconciler.runs`" + `),
  the WAL position (` + "`pg_current_wal_lsn`" + `) and the CPU time of every process (package bench),
  in that order, so each window carries one set of the soak's own queries.
- **Figures per window.** CPU per document is each process group's CPU time between two
  ends over the window's documents; the total adds the services, sandboxes, PostgreSQL and
  SQS. PostgreSQL's is also split by the role of the session that used it: on the private
  cluster each service connects as its own role, as deployed, and the harness as postgres;
  what no role claims is background work and sessions that ended. WAL per document is the
  WAL written between two ends over the documents; where the window's last 8 MB of it went
  (` + "`wal_sample_bytes`" + ` in results.json; reading it takes one core for a second or so
  at the window's end) is read back by table with ` + "`pg_walinspect`" + ` (the bench's WAL by table, with the full-page
  images among each table's bytes), so a window whose WAL grew says which tables' pages
  were written whole. p50 and p99
  are webhook accepted → invoice authorized of the window's payments, from the rows'
  timestamps as in the bench, and p99 is also given by hop: apply (webhook stored →
  payment and outbox row written), deliver (→ document recorded: the relay, SQS and the
  invoicer's consumer), publish (the relay's part of deliver: → outbox row marked published,
  after SQS took it) and emit (document recorded → authorized at the provider). The reconciler's figures are its runs of the sweep and the detectors
  finished in the window (the audits run in a loop of their own, and their runs are summed
  up apart, not judged: a listing follows what the day holds): their mean, median, fastest
  and slowest run (runs of the same work take longer as other work contends with them, so
  the fastest tells what the work costs); each phase's mean (sweep, detectors, audit) is read from its
  ` + "`onceflow_reconciler_phase_duration_seconds`" + ` between the two ends, and the sweep's two
  parts (sweep.recent: the passes over the rows since the watermark; sweep.full: the slices
  of the older history) from ` + "`onceflow_reconciler_sweep_pass_duration_seconds`" + `
  (` + "`reconciler.png`" + ` draws all but the audit's: tens of seconds or more against the sweep's fractions of one).
- **Stalls.** Beside the windows the soak reads the server every second: its active client
  backends by what they wait on, the tables autovacuum is vacuuming
  (` + "`pg_stat_progress_vacuum`" + `), whether an audit runs (` + "`reconciler.runs`" + `), the WAL
  position, the full-page images (` + "`pg_stat_wal`" + `) and the buffers the checkpointer wrote
  (` + "`pg_stat_bgwriter`" + `), the machine's busy cores (` + "`/proc/stat`" + `) and its pressure, the
  time in which some task waited on a core, on memory or on IO (` + "`/proc/pressure`" + `: a stall
  every process takes at once shows there, whichever resource held it). Each minute the
  window's payments were received in gets its p99 and those figures (` + "`minutes`" + ` in
  results.json). A minute whose p99 is at least twice its window's median minute is a stall;
  the stalled minutes are set beside the others, so what stands beside a stall (a
  checkpoint's full pages, autovacuum, the audit, waits on the WAL, a machine out of cores)
  shows in the figures that differ.
- **Retention.** Every pruned table keeps its rows ` + "`-retention`" + ` (default two windows at the
  offered rate), or the service's floor when that is longer: ingest keeps receipts, PSP calls
  and delivered notifications 24 h at least, idempotency keys 1 h; the invoicer keeps
  attempts 1 h (and each document's last attempt for good, so that table grows with the
  documents). Pruners run every quarter retention (1 s to their shipped interval), the
  reconciler every quarter window (at most its shipped minute; ` + "`-reconcile-every`" + `), its
  audit listing today every half window (at most its shipped 10 min) at three times the payments'
  rate (` + "`RECONCILER_AUDIT_RATE`" + `: a listing gains on the documents issued while it runs at twice
  their rate, so it takes about half the time to the next), with a sweep grace of 2 min.
  Ingest's order poller looks every 5 s at the orders recorded a minute ago or more and takes
  twice the orders recorded since its last look; every order is paid, so it leaves the
  schedule at its first look without a search (` + "`INGEST_POLL_PAID_GIVE_UP=0s`" + `): with the
  shipped 50 orders every 30 s the poller falls behind from 1.7 payments/s on and its schedule
  grows with the run. The grace and the poller's minute are shorter than shipped (10 min each)
  so that the sweep's steady work and the poller's claims begin in the first window, which
  the verdict compares the last with; a document takes under a second here, so neither
  chases a payment in flight. ` + "`-env`" + ` overrides any of these, within the floors (the services
  refuse less). So the default run, under three hours, prunes the outboxes, idempotency keys
  and attempts, but keeps every receipt: the tables a floor keeps past the run are listed,
  not judged. The latency needs each window's receipts until it ends, so a receipt retention
  must outlast a window.
- **Verdict.** The last window against the first: CPU per document (the pipeline's total, and
  the machine's busy time, which also counts what no process reading sees) and p99 may be
  at most ` + "`-tolerance`" + ` (15 %) higher. So may the sweep's mean run time, against the first
  window to begin once its runs have their steady work, the grace, the sweep's overlap and one
  interval after the first payment (5 min by default): earlier runs find fewer payments past
  the grace. Each pruned table
  whose retention acts in the run is compared from the first window that ended a window after
  its first rows could go (retention plus the pruner's interval) to the last; the others, and
  the attempts (a row per document stays), are listed as not judged. A figure that falls
  passes. Beside the CPU checks, not judged, stands the load generator's CPU a document: its
  work a document is fixed (it offers each payment, reads each latency once and samples the
  server once a second), so it moves only with the machine's speed, which moves every
  process at once (a busier host, the memory the kernel's reclaim scans); each CPU check also
  gives its ratio over that one, the part of its change that is not the machine's.
- **PostgreSQL.** The run's own cluster (package pgcluster, as the chaos run's; ` + "`-pg shared`" + `
  uses ` + "`DATABASE_URL`" + `'s server instead) has the settings
  [docs/architecture.md](../docs/architecture.md#postgresql-settings) recommends for production
  (` + "`-pg-settings`" + `: a checkpoint every 15 minutes, up to 16 GB of WAL between two,
  full-page images compressed with lz4, shared buffers a quarter of the machine's memory)
  but ` + "`fsync = off`" + `, so its WAL and sizes are the run's alone. With PostgreSQL's 128 MB of
  shared buffers, every page beyond them is read through the kernel's page cache, and a
  machine that drops cache pages unread for a while (some virtual machines run such a
  reclaimer) sends the sweep's old documents and random-key index leaves to the disk:
  a 1,000,000-document run so configured was not flat. A window's full pages a document are the pages the WAL
  took whole because no checkpoint had seen them changed yet; with PostgreSQL's defaults (a
  checkpoint at every gigabyte of WAL) they grow with the tables and drive the WAL up.
  Autovacuum is on, as in production: a pruned row's
  space is reused only once autovacuum has passed over the table (every minute at most), so a
  table pruned in a run of a few minutes still grows, and sizes are for windows of many
  minutes. The soak prints a warning, and results.json records ` + "`autovacuum`" + `, when the server
  does not autovacuum (the shared test server here does not).
- **The machine is shared.** PostgreSQL's CPU is the private cluster's processes' (with
  ` + "`-pg shared`" + `, every PostgreSQL process's, other work too); the emulator's is every Node
  process's; "reclaim" is the kernel's page reclaim threads (kswapd, and kdamond on a
  machine that pages out memory left unread for a while: its work grows with the memory
  the run touches, not with the documents), and "other" is the rest of the machine. The
  machine's CPU a document counts both. Compare runs back to back.
`

// Readme renders soak/README.md: the method, then the run's windows and
// verdict when r is not nil.
func Readme(r *Results) string {
	var b bytes.Buffer
	b.WriteString(readmeIntro)
	if r == nil || len(r.Windows) == 0 {
		b.WriteString("\n## Figures\n\nNo soak has been recorded here yet: run `make soak`.\n")
		return b.String()
	}
	c := r.Config
	fmt.Fprintf(&b, "\n## Figures\n\n%d documents in windows of %d at %d payments/s, started %s on %d CPUs; PostgreSQL %s (%sautovacuum %s); retention %s, reconciler every %s; `-env` %s.\n\n",
		c.Documents, c.Window, c.Rate, r.StartedAt.Format("2006-01-02 15:04 MST"), r.CPUs, c.PG, settingsOf(c.PGSettings), r.Autovacuum, c.retentionTarget(), c.reconcileEvery(), envOf(c.Env))
	if c.LatencySlice < 1 {
		b.WriteString("This run read each window's latencies whole at its end, before the slices above (with parallel workers, JIT and hash joins), so every window after the first opens with that read's stall.\n\n")
	}
	b.WriteString("| window | documents | s | CPU ms/doc | WAL B/doc | full pages/doc | p50 ms | p99 ms | p99 by hop, ms | tables MB | tables pruned in the run, MB | reconciler runs | mean s | median s | min s | max s | mean s by phase |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	pruned := prunedSet(r.Pruned)
	for _, w := range r.Windows {
		all, kept := w.total(pruned)
		fmt.Fprintf(&b, "| %d | %d | %.0f | %.2f | %.0f | %.2f | %.0f | %.0f | %s | %.1f | %.1f | %d | %.3f | %s | %.3f | %s |\n", w.Index, w.Documents, w.Seconds,
			w.CPUMsPerDocTotal, w.WALBytesPerDoc, w.FullPagesPerDoc, w.P50Ms, w.P99Ms, w.hops(), float64(all)/1e6, float64(kept)/1e6,
			w.Reconciler.Count, w.Reconciler.MeanSeconds, w.Reconciler.spreadCells(), w.Reconciler.MaxSeconds, w.Reconciler.phases())
	}
	walTable(&b, c.WALSample, r.Windows[0], r.Windows[len(r.Windows)-1])
	stallTable(&b, r.Windows)
	fmt.Fprintf(&b, "\nVerdict:\n\n```\n%s\n```\n\n", strings.TrimRight(r.Verdict.String(), "\n"))
	b.WriteString("![CPU per document](cpu_per_doc.png)\n\n![Latency](latency.png)\n\n![Table sizes](table_sizes.png)\n\n![Reconciler](reconciler.png)\n")
	return b.String()
}

// walTableRows is how many tables the WAL table lists.
const walTableRows = 10

// walTable writes where the first and the last window's WAL went (their
// samples, of sample bytes each), by table, most in the last window
// first; nothing for a run whose windows have no sample.
func walTable(b *bytes.Buffer, sample int, first, last Window) {
	if len(first.WALSample) == 0 || len(last.WALSample) == 0 || first.Index == last.Index {
		return
	}
	of := func(w Window) map[string]bench.TableWAL {
		m := map[string]bench.TableWAL{}
		for _, t := range w.WALSample {
			m[t.Table] = t
		}
		return m
	}
	firsts := of(first)
	fmt.Fprintf(b, "\nWhere the WAL went, per document, in the last %d MB of window %d and of window %d, by table, with the full-page images among those bytes:\n\n", sample>>20, first.Index, last.Index)
	fmt.Fprintf(b, "| table | window %d B/doc | full pages | window %d B/doc | full pages |\n|---|--:|--:|--:|--:|\n", first.Index, last.Index)
	for _, t := range last.WALSample[:min(walTableRows, len(last.WALSample))] {
		f := firsts[t.Table]
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f | %.0f |\n", t.Table, f.Bytes, f.FPI, t.Bytes, t.FPI)
	}
}

// settingsOf lists server settings for the README's header, "" for none.
func settingsOf(settings []string) string {
	if len(settings) == 0 {
		return ""
	}
	return strings.Join(settings, ", ") + "; "
}

// envOf lists the -env settings a run was given, which override the
// soak's own (the method above describes those).
func envOf(env []string) string {
	if len(env) == 0 {
		return "none"
	}
	return strings.Join(env, ", ")
}

// prunedSet is the names of the tables pruned during the run (whose
// retention acts before it ends).
func prunedSet(ps []Pruned) map[string]bool {
	out := map[string]bool{}
	for _, p := range ps {
		if p.Acts {
			out[p.Table] = true
		}
	}
	return out
}
