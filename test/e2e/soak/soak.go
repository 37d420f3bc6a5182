// Package soak runs the whole onceflow pipeline at a steady rate for many
// documents, with retention and pruning shortened so that they act during
// the run, and measures it window by window: CPU per document by process,
// WAL per document, table and index sizes, the reconciler's run times and
// the end-to-end latency. It then compares the last window with the first:
// a pipeline that holds up over time spends as much per document at the end
// as at the start, its pruned tables stop growing and its reconciler takes
// as long. It reuses package bench's load, CPU reading and plotting over
// package stack. `make soak` runs it through test/e2e/cmd/soak. A rate
// that keeps more than BusyShare of the cores busy in the first window
// gets a line saying so, with one the machine carries: near saturation the
// windows differ by the machine's queues, not by onceflow.
package soak

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/test/e2e/bench"
	"github.com/onceflow/onceflow/test/e2e/pgcluster"
)

// Config shapes a soak.
type Config struct {
	Out       string // where results.json, the plots and README.md go
	Documents int    // payments offered, each one invoice; a multiple of Window
	Window    int    // documents per measured window
	Rate      int    // payments offered per second
	// Retention is how long every pruned table keeps its rows in the run
	// (each service's floor still applies); 0 is two windows at Rate.
	Retention time.Duration
	// ReconcileEvery is the reconciler's interval; 0 is a quarter of a
	// window at Rate, at most the shipped minute.
	ReconcileEvery time.Duration
	// PG is where the stack's database lives: "private", a cluster of the
	// run's own (package pgcluster: autovacuum on as PostgreSQL ships it, no
	// other work in its WAL), or "shared", the server at DATABASE_URL.
	PG string
	// PGSettings are the private cluster's server settings (name=value),
	// on top of pgcluster's; a shared server keeps its own. The default is what docs/architecture.md
	// recommends for production, sized for this machine.
	PGSettings []string
	Tolerance  float64       // how much worse the last window may be than the first, 0.15 for 15 %
	Timeout    time.Duration // the longest a window's documents may take once its last payment was offered
	// LatencySlice is how many of a window's payments the soak reads at a
	// time, as the run goes, once they are all invoiced (SliceDocs). 0 is
	// how runs before the slices read: each window whole at its end.
	LatencySlice int
	// WALSample is how many bytes of each window's WAL, its last, the
	// soak reads by table (WALSampleBytes by default; 0: none).
	WALSample int
	// Env adds NAME=value settings to every process after the soak's own
	// (so it overrides them); the default lifts the invoicer's limit on
	// provider calls, as the bench does (bench.Config.Env).
	Env []string
}

// Defaults are issue 22's soak: a million documents in windows of 100,000
// at 100 a second, under three hours, on a private cluster with the
// settings docs/architecture.md asks of production (PGSettings).
func Defaults() Config {
	return Config{Out: "soak", Documents: 1_000_000, Window: 100_000, Rate: 100, PG: PGPrivate, PGSettings: productionPG(), Tolerance: 0.15,
		Timeout: 5 * time.Minute, LatencySlice: SliceDocs,
		WALSample: WALSampleBytes, Env: bench.Defaults().Env}
}

// productionPG is pgcluster.Recommended and shared buffers a quarter of
// this machine's memory; PostgreSQL's 128 MB where /proc/meminfo cannot
// be read, which the soak's first line (its settings) shows.
func productionPG() []string {
	pg := slices.Clip(pgcluster.Recommended)
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return pg
	}
	if sb, err := pgcluster.SharedBuffers(string(meminfo)); err == nil {
		pg = append(pg, sb)
	}
	return pg
}

// Values of Config.PG.
const (
	PGPrivate = "private"
	PGShared  = "shared"
)

// maxDocuments keeps order ids at eight digits.
const maxDocuments = 99_999_999

// Check says which setting is out of range, by its flag name.
func (c Config) Check() error {
	switch {
	case c.Out == "":
		return errors.New("-out: want a directory")
	case c.Window < 1:
		return errors.New("-window: want 1 or more documents")
	case c.Documents < 2*c.Window || c.Documents > maxDocuments || c.Documents%c.Window != 0:
		return fmt.Errorf("-documents: want a multiple of -window (%d), at least two windows, at most %d", c.Window, maxDocuments)
	case c.Rate < 1 || c.Rate > 10_000:
		return errors.New("-rate: want 1 to 10000 payments per second")
	case c.Retention < 0:
		return errors.New("-retention: want 0 (two windows) or a positive duration")
	case c.ReconcileEvery < 0:
		return errors.New("-reconcile-every: want 0 (a quarter window) or a positive duration")
	case c.PG != PGPrivate && c.PG != PGShared:
		return fmt.Errorf("-pg: want %s or %s", PGPrivate, PGShared)
	case c.Tolerance <= 0 || c.Tolerance >= 1:
		return errors.New("-tolerance: want a share between 0 and 1, such as 0.15")
	case c.Timeout <= 0:
		return errors.New("-timeout: want a positive duration")
	}
	for _, kv := range c.PGSettings {
		if name, v, ok := strings.Cut(kv, "="); !ok || name == "" || v == "" {
			return fmt.Errorf("-pg-settings: %q: want name=value", kv)
		}
	}
	for _, kv := range c.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return fmt.Errorf("-env: %q: want NAME=value", kv)
		}
	}
	return nil
}

// Windows is how many windows the run measures.
func (c Config) Windows() int { return c.Documents / c.Window }

// WindowTime is how long one window takes to offer at Rate.
func (c Config) WindowTime() time.Duration {
	return time.Duration(c.Window) * time.Second / time.Duration(c.Rate)
}

// RunTime is how long the whole run takes to offer at Rate.
func (c Config) RunTime() time.Duration { return time.Duration(c.Windows()) * c.WindowTime() }

// window is the window payment i (from 0) belongs to.
func (c Config) window(i int) int { return i / c.Window }

// orderID is the merchant order id of payment i of the run tagged prefix:
// fixed width, so the ids of a window are one range.
func orderID(prefix string, i int) string { return fmt.Sprintf("%s%08d", prefix, i) }

// slice is how many payments the run reads at a time: LatencySlice, or
// the whole window.
func (c Config) slice() int {
	if c.LatencySlice < 1 {
		return c.Window
	}
	return min(c.LatencySlice, c.Window)
}

// reconcileEvery is the reconciler's interval in the run.
func (c Config) reconcileEvery() time.Duration {
	if c.ReconcileEvery > 0 {
		return c.ReconcileEvery
	}
	return max(time.Second, min(time.Minute, c.WindowTime()/4).Truncate(time.Second))
}

// The sweep's settings in the run: the grace the soak gives it, and its
// shipped overlap. The shipped 10-minute grace would hold the sweep's
// steady work out of the first 13 minutes, most or all of a first window at
// 125 payments/s and more, so the last window would be judged against a
// first that lacks it; 2 minutes still leaves every payment in flight alone
// (a document takes under a second at the rates a soak runs).
const (
	soakGrace      = 2 * time.Minute
	shippedOverlap = 2 * time.Minute
)

// sweepSteady is how long after the first payment the reconciler's sweep
// has its steady work: it asks about payments paid longer than the grace
// ago and re-reads its overlap before them on every run, so the runs before
// a grace, an overlap and an interval find fewer. Env's settings win.
func (c Config) sweepSteady() time.Duration {
	grace, ok := c.setting("RECONCILER_GRACE")
	if !ok {
		grace = soakGrace
	}
	overlap, ok := c.setting("RECONCILER_SWEEP_OVERLAP")
	if !ok {
		overlap = shippedOverlap
	}
	return grace + overlap + c.reconcileEvery()
}

// auditEvery is how often the reconciler's audit lists today in the run:
// every half window, at most its shipped 10 minutes.
func (c Config) auditEvery() time.Duration {
	return max(time.Second, min(10*time.Minute, c.WindowTime()/2).Truncate(time.Second))
}

// retentionTarget is the retention the run asks of every pruned table.
func (c Config) retentionTarget() time.Duration {
	if c.Retention > 0 {
		return c.Retention
	}
	return 2 * c.WindowTime().Truncate(time.Second)
}

// retention is one retention setting of a service: the tables it prunes,
// the shortest value the service accepts, and the setting of its pruner's
// interval with the shipped value.
type retention struct {
	name     string
	floor    time.Duration
	interval string
	shipped  time.Duration // the interval's default
	tables   []string
	// keeps is what the pruner keeps for good, if anything: then the
	// table grows with the documents whatever the retention.
	keeps string
}

// retentions are the services' retention settings (docs/metrics.md lists
// the pruned tables). The floors are the services' own checks: ingest
// keeps receipts and delivered notifications a day at least, idempotency
// keys and the invoicer's attempts an hour (each document's last attempt
// for good, so that table grows with the documents whatever the setting).
var retentions = []retention{
	{"RELAY_RETENTION", 0, "RELAY_PRUNE_INTERVAL", time.Minute, []string{"ingest.outbox", "invoicer.outbox"}, ""},
	{"INGEST_RECEIPT_RETENTION", 24 * time.Hour, "INGEST_PRUNE_INTERVAL", time.Minute, []string{"ingest.webhook_receipts", "ingest.psp_fetches"}, ""},
	{"INGEST_IDEMPOTENCY_RETENTION", time.Hour, "INGEST_PRUNE_INTERVAL", time.Minute, []string{"ingest.idempotency_keys"}, ""},
	{"INGEST_NOTIFICATION_RETENTION", 24 * time.Hour, "INGEST_PRUNE_INTERVAL", time.Minute, []string{"ingest.notification_deliveries", "ingest.notification_attempts"}, ""},
	{"INVOICER_ATTEMPTS_RETENTION", time.Hour, "INVOICER_ATTEMPTS_PRUNE_INTERVAL", time.Hour, []string{"invoicer.emission_attempts"}, "each document's last attempt"},
}

// Pruned is one pruned table and the retention the run gave it.
type Pruned struct {
	Table     string        `json:"table"`
	Setting   string        `json:"setting"`
	Retention time.Duration `json:"-"`
	Interval  time.Duration `json:"-"`
	// Acts is whether rows outlive the retention, and the pruner runs,
	// before the run ends: only then is the table's size judged.
	Acts bool `json:"acts"`
	// Keeps is what the pruner keeps for good ("" for nothing): such a
	// table grows with the documents, and its size is not judged.
	Keeps string `json:"keeps,omitempty"`
}

// keep is the retention the run gives setting r: Env's, or the target, or
// the service's floor when higher.
func (c Config) keep(r retention) time.Duration {
	if d, ok := c.setting(r.name); ok {
		return d
	}
	return max(c.retentionTarget(), r.floor)
}

// setting is the duration Env sets name to, its last setting winning as in
// the processes' environment.
func (c Config) setting(name string) (d time.Duration, ok bool) {
	for _, kv := range c.Env {
		if n, v, _ := strings.Cut(kv, "="); n == name {
			if parsed, err := time.ParseDuration(v); err == nil {
				d, ok = parsed, true
			}
		}
	}
	return d, ok
}

// intervals are the pruners' intervals in the run, by setting: Env's, or a
// quarter of the shortest retention the pruner applies, from 1 s up to the
// shipped value.
func (c Config) intervals() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, r := range retentions {
		every := max(time.Second, min(r.shipped, c.keep(r)/4))
		if d, ok := c.setting(r.interval); ok {
			every = d
		}
		if d, ok := out[r.interval]; !ok || every < d {
			out[r.interval] = every
		}
	}
	return out
}

// pruned lists every pruned table with the retention and pruner interval
// the run gives it.
func (c Config) pruned() []Pruned {
	every := c.intervals()
	var out []Pruned
	for _, r := range retentions {
		keep, iv := c.keep(r), every[r.interval]
		for _, t := range r.tables {
			out = append(out, Pruned{Table: t, Setting: r.name, Retention: keep, Interval: iv, Acts: keep+iv < c.RunTime(), Keeps: r.keeps})
		}
	}
	return out
}

// env is every setting the soak gives the processes: the retentions and
// pruner intervals, the reconciler's interval, how often its audit lists
// today and at what pace (three times the payments' rate: a listing gains
// on the documents issued while it runs at twice their rate, so one of what
// was issued since the last takes about half the time between them),
// the sweep's grace (soakGrace: the stack's 0 s would have the reconciler
// chase every payment in flight), the order poller sized to the rate
// (pollerEnv), and then Env.
func (c Config) env() []string {
	every := c.intervals()
	var out []string
	for _, r := range retentions {
		out = append(out, r.name+"="+c.keep(r).String())
	}
	for _, name := range slices.Sorted(maps.Keys(every)) {
		out = append(out, name+"="+every[name].String())
	}
	out = append(out, "RECONCILER_INTERVAL="+c.reconcileEvery().String(), "RECONCILER_AUDIT_CURRENT_EVERY="+c.auditEvery().String(),
		"RECONCILER_AUDIT_RATE="+strconv.Itoa(3*c.Rate), "RECONCILER_GRACE="+soakGrace.String())
	out = append(out, c.pollerEnv()...)
	return append(out, c.Env...)
}

// How the soak's order poller works: it looks every pollInterval at the
// orders recorded pollAfter ago or more. The shipped 10 minutes after would
// leave its claims out of most of a first window.
const (
	pollInterval = 5 * time.Second
	pollAfter    = time.Minute
)

// pollerEnv keeps ingest's order poller up with the rate, as
// services/ingest/README.md asks of production: every order is paid, so a
// paid order leaves the schedule at its first look without a search
// (INGEST_POLL_PAID_GIVE_UP=0s; a second payment on it is the PSP audit's),
// each look takes twice the orders recorded since the last, and an order is
// first looked at a minute after it was recorded (pollAfter). The shipped
// 50 orders every 30 s would fall further behind every second of a run
// faster than 1.7 payments/s, its schedule index growing with the run.
func (c Config) pollerEnv() []string {
	batch := 2 * c.Rate * int(pollInterval/time.Second)
	return []string{"INGEST_POLL_PAID_GIVE_UP=0s", "INGEST_POLL_AFTER=" + pollAfter.String(), "INGEST_POLL_INTERVAL=" + pollInterval.String(), "INGEST_POLL_BATCH=" + strconv.Itoa(batch)}
}
