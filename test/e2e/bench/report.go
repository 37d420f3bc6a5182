package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Results are one run's figures, written to results.json. Rates are per
// second, latencies in milliseconds, drain times in seconds.
type Results struct {
	PGCeilingTPS      float64                       `json:"pg_ceiling_tps"`
	IngestRPS         float64                       `json:"ingest_rps"`
	IngestP50Ms       float64                       `json:"ingest_p50_ms"`
	IngestP99Ms       float64                       `json:"ingest_p99_ms"`
	IngestRatio       float64                       `json:"ingest_ratio"`          // the median of IngestRatioRounds
	IngestRatioRounds []float64                     `json:"ingest_ratio_by_round"` // ingest/ceiling in each round of the ingest_closed stage
	OpenRate          int                           `json:"ingest_open_rate"`
	OpenAchievedRPS   float64                       `json:"-"` // ingest_rps_at_<rate>rps
	OpenP50Ms         float64                       `json:"-"` // ingest_p50_ms_at_<rate>rps
	OpenP99Ms         float64                       `json:"-"` // ingest_p99_ms_at_<rate>rps, over every window's answered requests
	OpenP99Repeats    []float64                     `json:"-"` // ingest_p99_ms_at_<rate>rps_by_window: each window's p99 (+Inf: it shed load)
	OpenServer        []WindowServer                `json:"-"` // ingest_server_at_<rate>rps_by_window: what PostgreSQL did in each window
	OpenShed          int64                         `json:"-"` // ingest_shed_at_<rate>rps: webhooks refused busy (503)
	OpenLagP99Ms      float64                       `json:"-"` // ingest_start_lag_p99_ms_at_<rate>rps: how late the generator started them
	SQSRawMPS         float64                       `json:"sqs_raw_mps"`
	RelayMPS          float64                       `json:"relay_mps"`
	RelayRatio        float64                       `json:"relay_ratio"`          // the median of RelayRatioRounds
	RelayRatioRounds  []float64                     `json:"relay_ratio_by_round"` // relay/raw in each round of the relay stage
	RelayCPURounds    []RelayCPU                    `json:"relay_cpu_us_per_msg_by_round"`
	RelayCPURatio     float64                       `json:"relay_cpu_ratio"` // the median of the rounds' raw/relay machine CPU a message
	E2EDocsPerS       float64                       `json:"e2e_docs_per_s"`
	E2EP50Ms          float64                       `json:"e2e_p50_ms"`
	E2EP99Ms          float64                       `json:"e2e_p99_ms"`
	E2EPayments       int                           `json:"e2e_payments"`
	SteadyRate        int                           `json:"e2e_steady_rate"`   // payments/s offered
	SteadyP50Ms       float64                       `json:"e2e_steady_p50_ms"` // at that rate
	SteadyP99Ms       float64                       `json:"e2e_steady_p99_ms"`
	E2EHops           []Hop                         `json:"e2e_hops"`
	Burst             BurstCost                     `json:"-"` // its figures are top-level keys (see JSON)
	SteadyHops        []Hop                         `json:"e2e_steady_hops"`
	SteadyCost        BurstCost                     `json:"e2e_steady_cost"` // what each document of the steady run cost
	BacklogSeconds    map[int]float64               `json:"-"`               // by backlog size
	CPU               map[string]map[string]float64 `json:"cpu_cores"`       // per stage, per process group
	PGActive          map[string][]ActiveStatement  `json:"pg_active"`       // per stage, sampled from pg_stat_activity
	Config            Config                        `json:"config"`
	StartedAt         time.Time                     `json:"started_at"`
	CPUs              int                           `json:"cpus"`
}

// JSON is the results as one JSON object, keys sorted: the fields above,
// with the open loop's figures named by its rate (ingest_p99_ms_at_1000rps),
// the backlogs' by their size (backlog_100k_s), and the burst's cost per
// document (BurstCost) at the top level.
func (r Results) JSON() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	for n, s := range r.BacklogSeconds {
		obj["backlog_"+sizeLabel(n)+"_s"] = s
	}
	at := fmt.Sprintf("_at_%drps", r.OpenRate)
	obj["ingest_rps"+at], obj["ingest_p50_ms"+at], obj["ingest_p99_ms"+at] = r.OpenAchievedRPS, r.OpenP50Ms, r.OpenP99Ms
	obj["ingest_start_lag_p99_ms"+at] = r.OpenLagP99Ms
	if len(r.OpenP99Repeats) > 0 {
		obj["ingest_p99_ms"+at+"_by_window"] = finite(r.OpenP99Repeats)
		obj["ingest_p99_windows_met"+at] = WindowsWithin(r.OpenP99Repeats, OpenP99GoalMs)
		obj["ingest_shed"+at] = r.OpenShed
		obj["ingest_server"+at+"_by_window"] = r.OpenServer
	}
	if err := mergeJSON(obj, r.Burst); err != nil {
		return nil, err
	}
	dropUnmeasured(obj, r.Config.Stages, at)
	return json.MarshalIndent(obj, "", "  ")
}

// OpenP99GoalMs is the open loop's p99 goal: each window's p99 is held to
// it, and ingest_p99_windows_met_at_<rate>rps is the share that meet it.
const OpenP99GoalMs = 20

// finite writes a window that shed load (+Inf) as -1, which JSON can hold.
func finite(p99s []float64) []float64 {
	out := make([]float64, len(p99s))
	for i, v := range p99s {
		out[i] = v
		if math.IsInf(v, 1) {
			out[i] = -1
		}
	}
	return out
}

// WindowsWithin is the share of windows whose p99 is at most goal ms.
func WindowsWithin(p99s []float64, goal float64) float64 {
	met := 0
	for _, v := range p99s {
		if v <= goal {
			met++
		}
	}
	return float64(met) / float64(len(p99s))
}

// stageKeys are the figures each stage measures.
var stageKeys = map[string][]string{
	"ingest_closed": {"pg_ceiling_tps", "ingest_rps", "ingest_p50_ms", "ingest_p99_ms", "ingest_ratio", "ingest_ratio_by_round"},
	"ingest_open":   {"ingest_rps%s", "ingest_p50_ms%s", "ingest_p99_ms%s", "ingest_start_lag_p99_ms%s", "ingest_p99_ms%s_by_window", "ingest_p99_windows_met%s", "ingest_shed%s", "ingest_server%s_by_window"},
	"relay":         {"relay_mps", "sqs_raw_mps", "relay_ratio", "relay_ratio_by_round", "relay_cpu_ratio", "relay_cpu_us_per_msg_by_round"},
	"pipeline": {"e2e_docs_per_s", "e2e_p50_ms", "e2e_p99_ms", "e2e_hops", "pg_statements_per_doc", "pg_statements_per_doc_by_service",
		"wal_bytes_per_doc", "pg_statements_wal_bytes_per_doc", "wal_fpi_per_doc", "pg_plans_per_doc", "pg_plan_ms_per_doc",
		"cpu_seconds_per_doc", "pg_statements", "psp_notifications_refused_per_doc"},
	"steady": {"e2e_steady_p50_ms", "e2e_steady_p99_ms", "e2e_steady_hops", "e2e_steady_cost"},
}

// dropUnmeasured removes from obj the figures of the stages a run with
// -stages left out, so they read as not measured rather than as zero; at
// is the open loop's key suffix (_at_1000rps).
func dropUnmeasured(obj map[string]any, ran []string, at string) {
	if len(ran) == 0 {
		return
	}
	for st, keys := range stageKeys {
		if slices.Contains(ran, st) {
			continue
		}
		for _, k := range keys {
			if strings.Contains(k, "%s") {
				k = fmt.Sprintf(k, at)
			}
			delete(obj, k)
		}
	}
}

// mergeJSON adds v's JSON object's keys to obj.
func mergeJSON(obj map[string]any, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, &obj)
}

// sizeLabel writes 1000 as 1k and 100000 as 100k; other sizes as they are.
func sizeLabel(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// Table writes the figures as an aligned table, one figure a line.
func (r Results) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, v float64, unit string) { fmt.Fprintf(tw, "%s\t%.1f\t %s\t\n", name, v, unit) }
	row("pg_ceiling_tps", r.PGCeilingTPS, "receipt inserts/s, pgx, no HTTP")
	row("ingest_rps", r.IngestRPS, "signed webhooks/s, closed loop")
	row("ingest_p50_ms", r.IngestP50Ms, "ms")
	row("ingest_p99_ms", r.IngestP99Ms, "ms")
	fmt.Fprintf(tw, "ingest_ratio\t%.2f\t ingest / pg ceiling\t\n", r.IngestRatio)
	row(fmt.Sprintf("ingest_p99_ms_at_%drps", r.OpenRate), r.OpenP99Ms, fmt.Sprintf("ms, open loop, %d windows (p50 %.1f, achieved %.0f/s, %d refused busy)", len(r.OpenP99Repeats), r.OpenP50Ms, r.OpenAchievedRPS, r.OpenShed))
	if len(r.OpenP99Repeats) > 0 {
		fmt.Fprintf(tw, "ingest_p99_windows_met_at_%drps\t%.2f\t of windows with p99 ≤ %d ms (%s)\t\n", r.OpenRate,
			WindowsWithin(r.OpenP99Repeats, OpenP99GoalMs), OpenP99GoalMs, joinMillis(r.OpenP99Repeats))
	}
	row(fmt.Sprintf("ingest_start_lag_p99_ms_at_%drps", r.OpenRate), r.OpenLagP99Ms, "ms the generator started them late (its share of the p99)")
	row("sqs_raw_mps", r.SQSRawMPS, "msgs/s, SendMessageBatch from Go")
	row("relay_mps", r.RelayMPS, "msgs/s, outbox backlog drained")
	fmt.Fprintf(tw, "relay_ratio\t%.2f\t relay / raw SQS\t\n", r.RelayRatio)
	fmt.Fprintf(tw, "relay_cpu_ratio\t%.2f\t raw / relay, the machine's CPU a message\t\n", r.RelayCPURatio)
	row("e2e_docs_per_s", r.E2EDocsPerS, fmt.Sprintf("documents/s over %d payments", r.E2EPayments))
	row("e2e_p50_ms", r.E2EP50Ms, "ms, webhook accepted → authorized")
	row("e2e_p99_ms", r.E2EP99Ms, "ms")
	row("pg_statements_per_doc", r.Burst.Statements, "statements the services ran per document over the burst")
	row("wal_bytes_per_doc", r.Burst.WALBytes, "bytes of WAL per document over the burst")
	row("e2e_steady_p50_ms", r.SteadyP50Ms, fmt.Sprintf("ms at a steady %d payments/s", r.SteadyRate))
	row("e2e_steady_p99_ms", r.SteadyP99Ms, "ms")
	row("e2e_steady_statements_per_doc", r.SteadyCost.Statements, "statements the services ran per document at the steady rate")
	row("e2e_steady_wal_bytes_per_doc", r.SteadyCost.WALBytes, "bytes of WAL per document at the steady rate")
	for _, n := range slices.Sorted(maps.Keys(r.BacklogSeconds)) {
		s := r.BacklogSeconds[n]
		fmt.Fprintf(tw, "backlog_%s_s\t%.2f\t s to drain %d rows (%.0f rows/s)\t\n", sizeLabel(n), s, n, float64(n)/s)
	}
	return tw.Flush()
}

// largestFirst lists m as "name value" pairs, the largest value first and
// ties by name, each value written with format (e.g. "%.2f"): a stage's
// cores or statements by process or service, a message's CPU by process.
func largestFirst(m map[string]float64, format string) string {
	names := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + fmt.Sprintf(format, m[n])
	}
	return strings.Join(parts, ", ")
}

// Plots are what a run's pictures are drawn from.
type Plots struct {
	Burst    Sample   // the burst's end-to-end latencies
	Timeline Timeline // the burst's payments in and out over time
	Steady   Sample   // the steady run's end-to-end latencies
}

// Write saves results.json, README.md (the figures as tables, see
// RenderReadme) and the plots into dir, creating it: e2e_latency.png and
// e2e_steady_latency.png (the latency distributions of the burst and of
// the steady run), e2e_throughput.png (the burst per second over time).
func Write(dir string, r Results, plots Plots) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := r.JSON()
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := WriteReadme(dir, b); err != nil {
		return err
	}
	if err := plotLatency(filepath.Join(dir, "e2e_latency.png"), "burst", plots.Burst); err != nil {
		return err
	}
	if err := plotLatency(filepath.Join(dir, "e2e_steady_latency.png"), fmt.Sprintf("steady %d payments/s", r.SteadyRate), plots.Steady); err != nil {
		return err
	}
	return plotThroughput(filepath.Join(dir, "e2e_throughput.png"), plots.Timeline)
}

// plotLatency draws the distribution of one run's end-to-end latencies.
func plotLatency(path, run string, s Sample) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: webhook accepted → invoice authorized (n=%d, p50 %.0f ms, p99 %.0f ms)",
		run, s.Count(), s.Quantile(0.5), s.Quantile(0.99))
	p.X.Label.Text = "latency (ms)"
	p.Y.Label.Text = "payments"
	h, err := plotter.NewHist(plotter.Values(s.Latencies), 40)
	if err != nil {
		return fmt.Errorf("latency histogram: %w", err)
	}
	p.Add(h)
	p.Legend.Top, p.Legend.Left = true, true
	top := 0.0
	for _, b := range h.Bins {
		top = max(top, b.Weight)
	}
	for i, q := range []float64{0.5, 0.99} {
		x := s.Quantile(q)
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return fmt.Errorf("latency histogram: %w", err)
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i + 1)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("p%.0f", q*100), l)
	}
	return SavePNG(p, path)
}

// SavePNG draws p with a margin on top, where plot.Save would clip the
// title's ascenders, and writes it as a PNG.
func SavePNG(p *plot.Plot, path string) error {
	img := vgimg.New(8*vg.Inch, 4*vg.Inch)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, 0, 0, -6))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
