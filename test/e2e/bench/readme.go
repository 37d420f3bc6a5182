package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Target is the goal one figure of results.json is held to.
type Target struct {
	Key    string  // the figure's key in results.json
	Value  float64 // the goal
	AtMost bool    // a latency or a cost: met at or below Value; otherwise met at or above it
}

// Targets are the goals bench/README.md reports against. The end-to-end
// latency goal applies below capacity, so it is checked on the steady run;
// in the burst the latency is the queue by construction.
var Targets = []Target{
	{Key: "e2e_docs_per_s", Value: 800},
	{Key: "e2e_steady_p50_ms", Value: 250, AtMost: true},
	{Key: "ingest_ratio", Value: 0.7},
	{Key: "ingest_p99_ms_at_1000rps", Value: OpenP99GoalMs, AtMost: true},
	{Key: "ingest_p99_windows_met_at_1000rps", Value: 0.9},
	{Key: "relay_ratio", Value: 0.8},
	{Key: "pg_statements_per_doc", Value: 6, AtMost: true},
	{Key: "wal_bytes_per_doc", Value: 8192, AtMost: true},
}

// figure is one row of the README's figures table: a results.json key, how
// to print its value, and what it measures.
type figure struct {
	key, format, meaning string
}

// readmeFigures lists the figures in the order a reader follows the
// pipeline. %[1]d in a key or a meaning is the open loop's rate.
var readmeFigures = []figure{
	{"pg_ceiling_tps", "%.0f", "receipt inserts/s PostgreSQL takes: ingest's own insert statement straight through pgx, at the closed loop's concurrency, each receipt claimed as ingest claims those it hands its own apply worker (the median of the ingest_closed stage's rounds)"},
	{"ingest_rps", "%.0f", "signed webhooks/s ingest accepts in a closed loop, each a new event (the median of the rounds)"},
	{"ingest_p50_ms", "%.1f", "their median latency over every round, ms"},
	{"ingest_p99_ms", "%.1f", "their p99 latency, ms"},
	{"ingest_p50_ms_at_%[1]drps", "%.1f", "median latency at a fixed %[1]d webhooks/s (open loop, timed from each request's scheduled start), ms"},
	{"ingest_p99_ms_at_%[1]drps", "%.1f", "p99 latency at that fixed rate over the answered requests of every window, ms (each window's below)"},
	{"ingest_p99_windows_met_at_%[1]drps", "%.2f", "share of the open loop's windows whose p99 is within 20 ms (a window in which ingest refused any webhook busy, 503, is not)"},
	{"ingest_shed_at_%[1]drps", "%.0f", "webhooks ingest refused busy (503: no slot of `INGEST_WEBHOOK_MAX_IN_FLIGHT` freed within `INGEST_WEBHOOK_ADMISSION_WAIT`) at that rate: shed load a PSP retries, not lost"},
	{"ingest_start_lag_p99_ms_at_%[1]drps", "%.1f", "how late the load generator itself started those requests, p99, ms (its own share of the tail)"},
	{"sqs_raw_mps", "%.0f", "messages/s SendMessageBatch takes from Go at the same endpoint: the relay's messages, signature included, 10 a call, 4 calls in flight, no database (the median of the relay stage's rounds)"},
	{"relay_mps", "%.0f", "outbox rows/s the relay publishes while draining the largest backlog (the median of the rounds)"},
	{"e2e_docs_per_s", "%.0f", "documents/s through the whole pipeline for a burst of payments created at once"},
	{"e2e_p50_ms", "%.0f", "webhook accepted → invoice authorized in that burst, median, ms (mostly queueing: the last payment waits for all before it)"},
	{"e2e_p99_ms", "%.0f", "the same, p99, ms"},
	{"psp_notifications_refused_per_doc", "%.2f", "the PSP sandbox's notification attempts over the burst that ingest did not accept (refused busy, 503, and retried by the sandbox), per document: the sandbox sends at most 64 at once, as a PSP's delivery workers do, so a burst waits its turn instead"},
	{"pg_statements_per_doc", "%.1f", "statements the services ran per document over the burst (first payment created → ingest has recorded the last authorization), BEGIN and COMMIT included"},
	{"wal_bytes_per_doc", "%.0f", "bytes of WAL per document over the burst: the WAL position's advance, autovacuum and checkpoints included"},
	{"pg_statements_wal_bytes_per_doc", "%.0f", "of which the services' statements wrote themselves (an autocommitted statement's commit record aside)"},
	{"wal_fpi_per_doc", "%.2f", "full-page images per document among those (a page's first change after a checkpoint logs it whole)"},
	{"e2e_steady_p50_ms", "%.1f", "webhook accepted → invoice authorized at a steady rate below capacity, median, ms"},
	{"e2e_steady_p99_ms", "%.1f", "the same, p99, ms"},
}

// readmeIntro is the fixed part of bench/README.md: how to run the bench
// and what bounds its figures. Everything after it comes from results.json.
const readmeIntro = `# Benchmarks

<!-- Written by the bench (test/e2e/bench/readme.go) from results.json: edit the code, not this file. -->

` + "`make bench`" + ` measures every stage of onceflow on this machine beside the ceiling of the
engine under it: PostgreSQL's own insert rate beside ingest's webhook rate, bare
` + "`SendMessageBatch`" + ` beside the relay, then the whole pipeline from webhook to authorized
document, once as a burst and once at a steady rate. It builds and starts the whole stack
on a fresh database and its own queues (PostgreSQL and SQS as for ` + "`make test`" + `), takes a few
minutes and most of the machine, and writes [results.json](results.json),
this page and three plots: [e2e_throughput.png](e2e_throughput.png) (the burst's webhooks
in and invoices out, per second over time), [e2e_latency.png](e2e_latency.png) and
[e2e_steady_latency.png](e2e_steady_latency.png) (the latency distributions of the burst
and of the steady run). Commit them with the code they measured.

- Flags go through ` + "`ARGS`" + `, e.g. ` + "`make bench ARGS=\"-duration 30s -payments 5000\"`" + `;
  ` + "`go run ./test/e2e/cmd/bench -help`" + ` lists them. ` + "`-profiles DIR`" + ` also takes CPU profiles of
  ingest, relay and the invoicer over the first seconds of the burst, with an execution trace
  of each beside it (name.trace: where goroutines waited; ` + "`go tool trace`" + ` reads it), and
  of the steady run (into DIR/steady), of the relay draining the largest backlog and of the bench itself sending the same
  messages raw just before (DIR/relay/relay-1.pprof and raw.pprof) and of ingest
  under the closed loop (DIR/ingest_closed); ` + "`-stages pipeline`" + ` runs the burst alone (what a document costs,
  in a couple of minutes), the other stages' figures
  then reading as not measured.
- ` + "`make bench-readme`" + ` rewrites this page from results.json without running anything
  (after a change to the page's code).
- PostgreSQL is a cluster of the run's own with the checkpoint settings
  [docs/architecture.md](../docs/architecture.md#postgresql-settings) asks of production
  (` + "`max_wal_size=16GB`, `checkpoint_timeout=15min`, `wal_compression=lz4`" + `), so no
  checkpoint starts within a run. With PostgreSQL's own (one every gigabyte of WAL), the
  stages before started one in the open loop's third window, and the window of its
  full-page images (about 2,800 in five seconds, the sixth to the eighth) took 14-27 ms at
  p99, beside the kernel's writeback that slows the sixth anyway
  ([docs/architecture.md](../docs/architecture.md#postgresql-settings)).
  ` + "`make soak`" + ` runs long enough to meet its checkpoints.
- The run lifts the invoicer's limit on provider calls (` + "`INVOICER_PROVIDER_RATE_LIMIT=0`" + `): as
  shipped, 10 calls a second at two calls a document cap the pipeline at 5 documents/s to
  protect the provider, and the bench would measure the limiter (` + "`ARGS=\"-env ''\"`" + ` shows it).
- The PSP sandbox retries a webhook ingest refused busy (503) on dLocal's schedule with an
  hour compressed into about a second (` + "`PSP_TIME_SCALE=0.0003`" + `: 12 attempts over 71 s), as
  a real PSP retries for days; retrying every 200 ms, it gave a payment up within 2.4 s of
  a burst's shedding, and the run waited for the poller. It sends at most 64 notifications
  at once, as a PSP's pool of delivery workers does, and the others wait for one of them:
  when it sent all of a burst's 2,000 at once, more than ingest's intake holds (64 in
  flight, 256 waiting up to 500 ms), ingest refused about 300 busy, and their retries, a
  second later, were the burst's last webhooks (` + "`psp_notifications_refused_per_doc`" + `
  counts them).

## Reading the figures

- **Compare code only back to back.** The machine is shared, and its speed moves by half
  within a day, and within a minute (the raw SQS rate, which no onceflow code touches, is
  the tell: 15,000 to 23,000 messages/s in one hour). A figure from another day says
  little about a change; the relay stage therefore sends raw right before each of its
  drains and takes the median of five rounds, and the ingest_closed stage runs the
  ceiling and ingest in turn three times and takes the median of their ratios. The relay's
  CPU a message (` + "`relay_cpu_ratio`" + `) moves less than its rates: on two shared cores CPU
  bounds both sides. The raw sender runs with Go's default garbage collection, the relay
  with its own (` + "`GOGC`" + ` 400).
- **The ratios are the figures that travel.** Each divides a stage's rate by the rate of
  the engine under it, measured in the same run, so a slower machine moves both.
  The ceiling only inserts, where ingest's apply worker then marks each of ingest's receipts
  done, so a cheaper worker raises ` + "`ingest_ratio`" + `.
- **The throughput is CPU.** PostgreSQL, the SQS emulator, both sandboxes, the four services
  and the load generator share the same cores; the CPU table below says who used them in
  each stage.
- **Every stage starts on a quiet disk.** Before each, the bench has the kernel write back
  every dirty page of the machine (` + "`sync`" + `; the run prints how many megabytes and how
  long); before the open loop and each part of the closed one it also waits for the apply
  worker to finish the receipts before and vacuums the database. PostgreSQL shares its
  disk here with the stack's build and everything else, every commit waits for a WAL
  flush, and the kernel writes a file's dirty pages in one go once they are 30 s old: the
  build's pages, and autovacuum's pass over the relay stage's 300,000 published outbox rows
  (400 MB), each held the open loop's commits once a run (22-118 ms at p99 in that window,
  6-19 ms in the others).
- **A burst's latency is its queue.** In the burst every payment is created at once, so
  its end-to-end latency grows with the burst's size; the latency goal is checked on the
  steady run, below capacity. The hops table says where a payment waited.
- **The relay is bound by the SDK and the emulator**: the relay and the raw sender each
  spend most of a core in the AWS SDK beside a single-threaded SQS emulator, and the
  relay alone also needs PostgreSQL.
- **Statements and WAL per document are exact, and travel.** The bench runs its own
  PostgreSQL (a private cluster: fsync on, ` + "`pg_stat_statements`" + ` loaded) and connects each
  service as its own role, so every statement a service runs is counted by service, none of
  the harness's. Unlike the rates they barely move with the machine's load; they do move with
  the burst's size, since the services' polls run however few payments there are. The
  WAL by table is read back from the WAL itself (` + "`pg_walinspect`" + `), each record counted
  under the table (or index, or TOAST table) of its first block.
- **A rare slow run can be SQS's at-least-once delivery**: a receive answer lost on the
  way leaves its messages hidden for the queue's visibility timeout
  (` + "`INVOICER_CONSUMER_VISIBILITY`" + `, 30 s), then they are delivered and recorded once each. Each run
  prints its slowest payment by id and hop, to find it in the services' logs.
`

// readmeInput is what the page reads from results.json besides the
// top-level figures.
type readmeInput struct {
	Hops       []Hop                         `json:"e2e_hops"`
	SteadyHops []Hop                         `json:"e2e_steady_hops"`
	CPU        map[string]map[string]float64 `json:"cpu_cores"`
	StartedAt  time.Time                     `json:"started_at"`
	CPUs       int                           `json:"cpus"`
	Payments   int                           `json:"e2e_payments"`
	SteadyRate int                           `json:"e2e_steady_rate"`
	OpenRate   int                           `json:"ingest_open_rate"`
	CPUPerDoc  map[string]float64            `json:"cpu_seconds_per_doc"`
	ByService  map[string]float64            `json:"pg_statements_per_doc_by_service"`
	Statements []StatementCost               `json:"pg_statements"`
	Plans      float64                       `json:"pg_plans_per_doc"`
	PlanMs     float64                       `json:"pg_plan_ms_per_doc"`
	WALByTable []TableWAL                    `json:"wal_by_table"`
	Steady     BurstCost                     `json:"e2e_steady_cost"`
	Config     struct {
		Concurrency int      `json:"concurrency"`
		Duration    string   `json:"duration"`
		OpenRepeats int      `json:"open_repeats"`
		OpenWindow  string   `json:"open_window"`
		Env         []string `json:"env"`
	} `json:"config"`
}

// WriteReadme renders results.json (as Results.JSON writes it) into
// dir/README.md.
func WriteReadme(dir string, resultsJSON []byte) error {
	var b strings.Builder
	if err := RenderReadme(&b, resultsJSON); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(b.String()), 0o644)
}

// RenderReadme writes bench/README.md: the fixed introduction, then the
// tables of one run read from results.json. A figure missing from the
// results shows as a dash, and its target as not measured.
func RenderReadme(w io.Writer, resultsJSON []byte) error {
	var in readmeInput
	if err := json.Unmarshal(resultsJSON, &in); err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	figs, err := topFigures(resultsJSON)
	if err != nil {
		return err
	}
	p := &printer{w: w}
	p.line(readmeIntro)
	p.line("## The latest run\n")
	p.line("Started %s on %d cores: %d closed-loop workers, %s windows, the open loop over %d windows of %s, a burst of %d payments, a steady run at %d payments/s, settings %s.\n",
		in.StartedAt.UTC().Format("2006-01-02 15:04 MST"), in.CPUs, in.Config.Concurrency, in.Config.Duration,
		in.Config.OpenRepeats, in.Config.OpenWindow, in.Payments, in.SteadyRate, envList(in.Config.Env))
	p.line("| figure | value | what it measures |\n|---|--:|---|")
	for _, f := range readmeFigures {
		key, meaning := f.key, f.meaning
		if strings.Contains(key, "%[1]d") {
			key = fmt.Sprintf(key, in.OpenRate)
		}
		if strings.Contains(meaning, "%[1]d") {
			meaning = fmt.Sprintf(meaning, in.OpenRate)
		}
		p.line("| `%s` | %s | %s |", key, value(figs, key, f.format), meaning)
	}
	for _, key := range backlogKeys(figs) {
		p.line("| `%s` | %s | seconds the relay takes to drain a backlog of %s outbox rows |", key, value(figs, key, "%.2f"), backlogSize(key))
	}
	if p99s := windowP99s(resultsJSON, in.OpenRate); len(p99s) > 0 {
		p.line("\nThe open loop's p99 in each of its windows, in the order run: %s.", joinMillis(p99s))
	}
	if ws := windowServers(resultsJSON, in.OpenRate); len(ws) > 0 {
		p.line("\nThe full-page images PostgreSQL logged in each of those windows (*: a checkpoint was being written; "+
			"after it begins, the first change to each page logs the page whole; in brackets, the tables autovacuum was on): %s.", describeWindows(ws))
	}
	if rounds := series(resultsJSON, "ingest_ratio_by_round"); len(rounds) > 0 {
		p.line("\nIngest's rate over the ceiling's just before it, in each round of the ingest_closed stage: %s.", joinRatios(rounds))
	}
	if rounds := series(resultsJSON, "relay_ratio_by_round"); len(rounds) > 0 {
		p.line("\nThe relay's rate over raw SQS's just before it, in each round of the relay stage: %s.", joinRatios(rounds))
	}
	if rounds := relayCPURounds(resultsJSON); len(rounds) > 0 {
		p.line("\nCPU microseconds a message in each round, the machine's and by process (`sqs` is the emulator):\n")
		p.line("| round | raw | relay |\n|--:|---|---|")
		for i, c := range rounds {
			p.line("| %d | %s | %s |", i+1, largestFirst(c.Raw, "%.1f"), largestFirst(c.Relay, "%.1f"))
		}
	}
	p.line("\n## Ratios\n")
	p.line("| ratio | value | of |\n|---|--:|---|")
	p.line("| `ingest_ratio` | %s | ingest's rate / the ceiling's measured just before it, the median of the ingest_closed stage's rounds: how much of PostgreSQL's insert rate reaches ingest's webhooks |", value(figs, "ingest_ratio", "%.2f"))
	p.line("| `relay_ratio` | %s | the relay's rate / raw SQS's sent just before it, the median of the relay stage's rounds: how much of SQS's batch send rate the relay reaches |", value(figs, "relay_ratio", "%.2f"))
	p.line("| `relay_cpu_ratio` | %s | the machine's CPU a message sending raw / draining through the relay, the median of the rounds: the rate the relay would reach when CPU alone bounds both, as on a machine the emulator and PostgreSQL share |", value(figs, "relay_cpu_ratio", "%.2f"))
	if keys := backlogKeys(figs); len(keys) >= 2 {
		small, large := keys[0], keys[len(keys)-1]
		scale := backlogRows(large) / backlogRows(small)
		p.line("| backlog scaling | %s | `%s` / (%g × `%s`): below 1, a large backlog drains faster per row than a small one |",
			ratio(figs[large], figs[small]*scale), large, scale, small)
	}
	p.line("\n## Targets\n")
	p.line("| figure | target | this run | met |\n|---|---|--:|---|")
	for _, t := range Targets {
		p.line("| `%s` | %s | %s | %s |", t.Key, t.goal(), value(figs, t.Key, "%.2f"), t.met(figs))
	}
	p.line("\n## Where a payment waits\n")
	p.line("Each hop's latency, ms: apply (receipt stored → applied, outbox row written), relay (outbox row → published to SQS), record (published → document recorded by the invoicer's consumer), emit (recorded → authorized at the provider).\n")
	p.line("| hop | burst p50 | burst p99 | steady p50 | steady p99 |\n|---|--:|--:|--:|--:|")
	for _, name := range hopNames(in.Hops, in.SteadyHops) {
		b, s := findHop(in.Hops, name), findHop(in.SteadyHops, name)
		p.line("| %s | %s | %s | %s | %s |", name, b[0], b[1], s[0], s[1])
	}
	p.burstCost(in)
	p.line("\n## CPU by stage\n")
	p.line("Cores busy during each stage, by process group, busiest first (`machine` is the whole machine); " +
		"pg_ceiling and ingest_closed are the two parts of the ingest_closed stage, each over its rounds.\n")
	p.line("| stage | cores |\n|---|---|")
	for _, st := range stageNames(in.CPU) {
		p.line("| %s | %s |", st, largestFirst(in.CPU[st], "%.2f"))
	}
	return p.err
}

// readmeStatements is how many of the burst's statements the page lists.
const readmeStatements = 15

// burstCost writes what a document of the burst cost: CPU by process,
// statements by service, and the most called statements.
func (p *printer) burstCost(in readmeInput) {
	p.line("\n## What a document costs\n")
	p.line("Over the burst, per document: CPU milliseconds by process group, busiest first (`machine` is the whole machine), and statements by service; then the same over the steady run, where the batches are small and the polls weigh more.\n")
	p.line("| per document | |\n|---|---|")
	p.line("| CPU ms | %s |", cpuMsLine(in.CPUPerDoc))
	p.line("| statements | %s |", largestFirst(in.ByService, "%.2f"))
	if in.Steady.Statements > 0 {
		p.line("| steady: CPU ms | %s |", cpuMsLine(in.Steady.CPUSeconds))
		p.line("| steady: statements | %.2f (%s), %.0f WAL bytes, %.2f plans (%.2f ms) |", in.Steady.Statements, largestFirst(in.Steady.ByService, "%.2f"),
			in.Steady.WALBytes, in.Steady.Plans, in.Steady.PlanMs)
	}
	if in.Plans > 0 {
		p.line("| planning | %.2f plans, %.2f ms of PostgreSQL's CPU (pgx prepares each statement on each connection; PostgreSQL plans the first five calls for their values and goes on doing so while that plan looks cheaper) |", in.Plans, in.PlanMs)
	}
	p.line("\nThe most called statements (all of them in results.json, `pg_statements`), per document: calls, how often PostgreSQL planned them, rows, and the WAL bytes the statement wrote.\n")
	p.line("| service | statement | calls | plans | rows | WAL bytes |\n|---|---|--:|--:|--:|--:|")
	for _, s := range in.Statements[:min(readmeStatements, len(in.Statements))] {
		p.line("| %s | `%s` | %.2f | %.2f | %.2f | %.0f |", s.Service, statementName(s.Statement), s.Calls, s.Plans, s.Rows, s.WALBytes)
	}
	p.walByTable(in.WALByTable)
}

// readmeWALKinds is how many kinds of record the page names for a table.
const readmeWALKinds = 4

// walByTable writes where the burst's WAL went, by table: its own blocks,
// its indexes', and the kinds of record that wrote most.
func (p *printer) walByTable(tables []TableWAL) {
	if len(tables) == 0 {
		return
	}
	p.line("\nWhere the burst's WAL went, per document, read back from the WAL itself (`pg_walinspect`): by table, its own blocks (TOAST included) and its indexes', and the kinds of record that wrote most (bytes, with records a document in brackets); the indexes column says how many indexes were written.\n")
	p.line("| table | WAL bytes | table's blocks | indexes | most written by |\n|---|--:|--:|--:|---|")
	for _, t := range tables {
		if t.Bytes < 1 {
			continue
		}
		p.line("| %s | %.0f | %.0f | %.0f (%d) | %s |", t.Table, t.Bytes, t.Heap, t.Bytes-t.Heap, len(t.Indexes), strings.Join(t.topKinds(readmeWALKinds), ", "))
	}
}

// statementName is how the page names a statement: sqlc's query name when
// the text starts with one ("-- name: ReceiptInsert :execrows ..."), else
// its first 60 characters; pipes are escaped for the table.
func statementName(query string) string {
	if rest, ok := strings.CutPrefix(query, "-- name: "); ok {
		if name, _, ok := strings.Cut(rest, " "); ok {
			return name
		}
	}
	if len(query) > 60 {
		query = query[:60] + "…"
	}
	return strings.ReplaceAll(query, "|", "\\|")
}

// printer writes lines and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

// windowP99s reads the open loop's p99 by window from results.json; none
// for a run before windows were measured apart.
func windowP99s(resultsJSON []byte, rate int) []float64 {
	return series(resultsJSON, fmt.Sprintf("ingest_p99_ms_at_%drps_by_window", rate))
}

// windowServers reads what PostgreSQL did in each window of the open
// loop; none for a run before it was read.
func windowServers(resultsJSON []byte, rate int) []WindowServer {
	return field[[]WindowServer](resultsJSON, fmt.Sprintf("ingest_server_at_%drps_by_window", rate))
}

// relayCPURounds reads the relay stage's CPU a message in each round.
func relayCPURounds(resultsJSON []byte) []RelayCPU {
	return field[[]RelayCPU](resultsJSON, "relay_cpu_us_per_msg_by_round")
}

// series is the list of numbers results.json holds under key, or nil.
func series(resultsJSON []byte, key string) []float64 {
	return field[[]float64](resultsJSON, key)
}

// field is what results.json holds under key, or T's zero value when it
// holds nothing there that reads as a T.
func field[T any](resultsJSON []byte, key string) T {
	var raw map[string]json.RawMessage
	var v T
	if json.Unmarshal(resultsJSON, &raw) == nil {
		_ = json.Unmarshal(raw[key], &v)
	}
	return v
}

// topFigures returns every top-level number of results.json by its key.
func topFigures(resultsJSON []byte) (map[string]float64, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(resultsJSON, &raw); err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	figs := make(map[string]float64, len(raw))
	for k, v := range raw {
		var f float64
		if json.Unmarshal(v, &f) == nil {
			figs[k] = f
		}
	}
	return figs, nil
}

func value(figs map[string]float64, key, format string) string {
	v, ok := figs[key]
	if !ok {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func (t Target) goal() string {
	if t.AtMost {
		return fmt.Sprintf("≤ %g", t.Value)
	}
	return fmt.Sprintf("≥ %g", t.Value)
}

func (t Target) met(figs map[string]float64) string {
	v, ok := figs[t.Key]
	switch {
	case !ok:
		return "not measured"
	case t.AtMost && v <= t.Value, !t.AtMost && v >= t.Value:
		return "yes"
	}
	return "no"
}

// backlogKeys returns the backlog figures' keys, smallest backlog first.
func backlogKeys(figs map[string]float64) []string {
	var keys []string
	for k := range figs {
		if strings.HasPrefix(k, "backlog_") && strings.HasSuffix(k, "_s") {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return int(backlogRows(a) - backlogRows(b)) })
	return keys
}

// backlogSize is the size part of backlog_100k_s: 100k.
func backlogSize(key string) string {
	return strings.TrimSuffix(strings.TrimPrefix(key, "backlog_"), "_s")
}

// backlogRows is the number of rows backlog_100k_s names: 100000.
func backlogRows(key string) float64 {
	s, mult := backlogSize(key), 1.0
	if n, ok := strings.CutSuffix(s, "k"); ok {
		s, mult = n, 1000
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return n * mult
}

// hopNames lists the hops of both runs in the burst's order.
func hopNames(runs ...[]Hop) []string {
	var names []string
	for _, hops := range runs {
		for _, h := range hops {
			if !slices.Contains(names, h.Name) {
				names = append(names, h.Name)
			}
		}
	}
	return names
}

// findHop returns a hop's p50 and p99 as text, dashes when the run has none.
func findHop(hops []Hop, name string) [2]string {
	for _, h := range hops {
		if h.Name == name {
			return [2]string{fmt.Sprintf("%.1f", h.P50), fmt.Sprintf("%.1f", h.P99)}
		}
	}
	return [2]string{"—", "—"}
}

// stageOrder is the order of the CPU table's rows: the stages, the
// ingest_closed stage's two parts apart.
var stageOrder = []string{"pg_ceiling", "ingest_closed", "ingest_open", "relay", "pipeline", "steady"}

// stageNames lists the stages with CPU figures: the known ones in the
// run's order, then any others by name.
func stageNames(cpu map[string]map[string]float64) []string {
	var names []string
	for _, st := range stageOrder {
		if _, ok := cpu[st]; ok {
			names = append(names, st)
		}
	}
	for _, st := range slices.Sorted(maps.Keys(cpu)) {
		if !slices.Contains(names, st) {
			names = append(names, st)
		}
	}
	return names
}

func envList(env []string) string {
	if len(env) == 0 {
		return "as shipped"
	}
	quoted := make([]string, len(env))
	for i, e := range env {
		quoted[i] = "`" + e + "`"
	}
	return strings.Join(quoted, ", ")
}
