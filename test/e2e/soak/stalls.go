package soak

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/procfs"

	"github.com/onceflow/onceflow/test/e2e/bench"
)

// serverNow is what the watcher reads of the server each second: how many
// of the database's client backends are active, by what they wait on
// ("CPU" when nothing); the tables autovacuum is vacuuming; whether an
// audit of the reconciler is running; the WAL position, the full-page
// images and the buffers the checkpointer wrote, each so far.
const serverNow = `
SELECT (SELECT coalesce(jsonb_object_agg(s, n), '{}') FROM (
            SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS s, count(*) AS n
            FROM pg_stat_activity
            WHERE datname = current_database() AND state = 'active' AND backend_type = 'client backend'
              AND pid <> pg_backend_pid()
            GROUP BY 1) a),
       (SELECT coalesce(array_agg(n.nspname || '.' || c.relname), '{}')
        FROM pg_stat_progress_vacuum v JOIN pg_class c ON c.oid = v.relid JOIN pg_namespace n ON n.oid = c.relnamespace),
       EXISTS (SELECT 1 FROM reconciler.runs WHERE part = 'audit' AND finished_at IS NULL),
       pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
       (SELECT wal_fpi FROM pg_stat_wal),
       (SELECT buffers_checkpoint FROM pg_stat_bgwriter)`

// Minute is what the server did in one minute of the run, next to the p99
// of the payments received in it: a stall shows which of the suspects
// (a checkpoint's full-page images, autovacuum, the audit) stood beside it.
type Minute struct {
	At    time.Time `json:"at"` // the minute's start
	P99Ms float64   `json:"p99_ms"`
	// Backends is the average number of the database's client backends
	// active, by what they waited on ("CPU" when nothing), over the
	// minute's samples.
	Backends map[string]float64 `json:"backends,omitempty"`
	// WALBytes, FullPages and CheckpointBuffers are the WAL written, the
	// full-page images among it and the buffers the checkpointer wrote,
	// from the minute's first sample to the next minute's first.
	WALBytes          int64 `json:"wal_bytes"`
	FullPages         int64 `json:"full_pages"`
	CheckpointBuffers int64 `json:"checkpoint_buffers"`
	// Autovacuum are the tables autovacuum was seen vacuuming.
	Autovacuum []string `json:"autovacuum,omitempty"`
	// Audit is the share of the minute's samples with an audit running.
	Audit float64 `json:"audit"`
	// MachineCores is how many of the machine's cores were busy on
	// average over the same span, whatever used them: a stall beside a
	// machine near its cores is one of CPU, whoever took it.
	MachineCores float64 `json:"machine_cores"`
	// Pressure is, by resource (cpu, memory, io), the milliseconds a
	// second in which at least one task of the machine waited on it
	// (/proc/pressure's "some"), over the same span: a stall that every
	// process takes at once shows here, whichever resource held it. None
	// when the kernel does not report pressure.
	Pressure map[string]float64 `json:"pressure_ms_per_s,omitempty"`
	// Samples is how many samples the minute has (about 60).
	Samples int `json:"samples"`
}

// watcher samples the server once a second for the whole run, by minute.
type watcher struct {
	db *pgxpool.Pool

	mu      sync.Mutex
	minutes map[int64]*tally
}

// tally adds up one minute's samples.
type tally struct {
	samples  int
	backends map[string]int
	vacuumed map[string]bool
	audit    int
	first    counters // at the minute's first sample
	last     counters // at its last
}

// counters are the server's and the machine's running totals a minute's
// figures are differences of, and when they were read.
type counters struct {
	wal, fpi, buffers int64
	busy              float64            // the machine's busy CPU seconds (bench.MachineBusy)
	stalled           map[string]float64 // seconds some task stalled, by resource (pressure)
	at                time.Time
}

func newWatcher(db *pgxpool.Pool) *watcher {
	return &watcher{db: db, minutes: map[int64]*tally{}}
}

// run samples once a second until ctx ends; a failed sample is skipped.
func (w *watcher) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			w.sample(ctx, now)
		}
	}
}

func (w *watcher) sample(ctx context.Context, now time.Time) {
	var backends map[string]int
	var vacuumed []string
	var audit bool
	var c counters
	if err := w.db.QueryRow(ctx, serverNow).Scan(&backends, &vacuumed, &audit, &c.wal, &c.fpi, &c.buffers); err != nil {
		return
	}
	c.busy, _ = bench.MachineBusy()
	c.stalled = pressure()
	c.at = time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	key := now.Unix() / 60
	t := w.minutes[key]
	if t == nil {
		t = &tally{backends: map[string]int{}, vacuumed: map[string]bool{}, first: c}
		w.minutes[key] = t
	}
	t.samples++
	t.last = c
	for state, n := range backends {
		t.backends[state] += n
	}
	for _, table := range vacuumed {
		t.vacuumed[table] = true
	}
	if audit {
		t.audit++
	}
}

// fill sets what the watcher saw in each of minutes (each with its At and
// P99Ms): up to the next minute's first sample, or the minute's last
// sample when the next has none yet. A minute without a sample keeps its
// p99 alone.
func (w *watcher) fill(minutes []Minute) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, m := range minutes {
		key := m.At.Unix() / 60
		t := w.minutes[key]
		if t == nil {
			continue
		}
		end := t.last
		if next := w.minutes[key+1]; next != nil {
			end = next.first
		}
		m.Samples, m.Audit = t.samples, float64(t.audit)/float64(t.samples)
		m.WALBytes, m.FullPages, m.CheckpointBuffers = end.wal-t.first.wal, end.fpi-t.first.fpi, end.buffers-t.first.buffers
		m.Autovacuum = slices.Sorted(maps.Keys(t.vacuumed))
		if span := end.at.Sub(t.first.at).Seconds(); span > 0 {
			m.MachineCores = (end.busy - t.first.busy) / span
			m.Pressure = pressureRate(t.first.stalled, end.stalled, span)
		}
		m.Backends = map[string]float64{}
		for state, n := range t.backends {
			m.Backends[state] = float64(n) / float64(t.samples)
		}
		minutes[i] = m
	}
}

// pressured are the resources whose pressure the watcher reads: a core,
// memory (reclaim, a page read back from the disk) and IO.
var pressured = []string{"cpu", "memory", "io"}

// pressure returns, by resource, the seconds so far in which at least one
// task of the machine was stalled on it (/proc/pressure/<resource>,
// "some"); nil when the kernel does not report pressure.
func pressure() map[string]float64 {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, r := range pressured {
		st, err := fs.PSIStatsForResource(r)
		if err != nil || st.Some == nil {
			return nil
		}
		out[r] = float64(st.Some.Total) / 1e6
	}
	return out
}

// pressureRate is the milliseconds a second stalled on each resource
// between two readings span seconds apart; nil when either has none.
func pressureRate(from, to map[string]float64, span float64) map[string]float64 {
	if from == nil || to == nil {
		return nil
	}
	out := map[string]float64{}
	for r, s := range to {
		out[r] = (s - from[r]) * 1000 / span
	}
	return out
}

// minutesOf are the minutes of a window's latencies, each with its p99.
func minutesOf(lat windowLatency) []Minute {
	out := make([]Minute, len(lat.minutes))
	for i, key := range lat.minutes {
		out[i] = Minute{At: time.Unix(key*60, 0).UTC(), P99Ms: lat.byMinute[i]}
	}
	return out
}

// StallFactor is how many times its window's median minute p99 a minute's
// p99 reaches to count as a stall.
const StallFactor = 2

// minuteGroup adds up minutes the watcher saw.
type minuteGroup struct {
	count, seen                                int
	p99                                        []float64
	wal, fullPages, buffers, audit, autovacuum float64
	machine                                    float64 // cores busy, summed over the minutes seen
	backends                                   map[string]float64
	pressured                                  int                // minutes seen with pressure read
	pressure                                   map[string]float64 // ms a second, summed over those
}

func (g *minuteGroup) add(m Minute) {
	g.count++
	g.p99 = append(g.p99, m.P99Ms)
	if m.Samples == 0 {
		return
	}
	g.seen++
	g.wal += float64(m.WALBytes)
	g.fullPages += float64(m.FullPages)
	g.buffers += float64(m.CheckpointBuffers)
	g.audit += m.Audit
	g.machine += m.MachineCores
	if len(m.Autovacuum) > 0 {
		g.autovacuum++
	}
	if g.backends == nil {
		g.backends = map[string]float64{}
	}
	for state, n := range m.Backends {
		g.backends[state] += n
	}
	if m.Pressure != nil {
		g.pressured++
		if g.pressure == nil {
			g.pressure = map[string]float64{}
		}
		for r, v := range m.Pressure {
			g.pressure[r] += v
		}
	}
}

// meanPressure is the group's mean milliseconds a second stalled on each
// of pressured, "–" each for a group without pressure read.
func (g minuteGroup) meanPressure() string {
	parts := make([]string, len(pressured))
	for i, r := range pressured {
		parts[i] = "–"
		if g.pressured > 0 {
			parts[i] = fmt.Sprintf("%.0f", g.pressure[r]/float64(g.pressured))
		}
	}
	return strings.Join(parts, " | ")
}

// pressureOf is a minute's milliseconds a second stalled on each of
// pressured, as "cpu / memory / io"; "" without pressure read.
func pressureOf(m Minute) string {
	if m.Pressure == nil {
		return ""
	}
	parts := make([]string, len(pressured))
	for i, r := range pressured {
		parts[i] = fmt.Sprintf("%.0f", m.Pressure[r])
	}
	return strings.Join(parts, " / ")
}

// stalls splits the windows' minutes into the stalls, worst first, and
// the group of all stalled minutes and of the others.
func stalls(windows []Window) (worst []Minute, stalled, other minuteGroup) {
	for _, w := range windows {
		if len(w.Minutes) == 0 {
			continue
		}
		p99 := make([]float64, len(w.Minutes))
		for i, m := range w.Minutes {
			p99[i] = m.P99Ms
		}
		median := bench.NewSample(0, p99).Quantile(0.5)
		for _, m := range w.Minutes {
			if m.P99Ms >= StallFactor*median {
				stalled.add(m)
				worst = append(worst, m)
			} else {
				other.add(m)
			}
		}
	}
	slices.SortFunc(worst, func(a, b Minute) int { return cmp.Compare(b.P99Ms, a.P99Ms) })
	return worst, stalled, other
}

// stallRows is how many of the worst stalls the README lists.
const stallRows = 12

// stallTable writes the stalled minutes beside the others, and the worst
// of them; nothing for a run without minutes watched.
func stallTable(b *bytes.Buffer, windows []Window) {
	worst, stalled, other := stalls(windows)
	if stalled.seen+other.seen == 0 {
		return
	}
	fmt.Fprintf(b, "\nMinutes that stalled (a p99 at least %d times its window's median minute) beside the others, as the soak saw the server every second (averages a minute; backends active, by what they waited on; pressure, the milliseconds a second some task of the machine waited on a core, on memory or on IO):\n\n", StallFactor)
	b.WriteString("| minutes | count | median p99 ms | WAL MB | full pages | checkpoint buffers | audit running | autovacuum running | machine cores busy | backends: CPU | WALWrite | IO | Lock | pressure: CPU | memory | IO |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range []struct {
		name string
		g    minuteGroup
	}{{"stalled", stalled}, {"other", other}} {
		if g.g.count == 0 {
			fmt.Fprintf(b, "| %s | 0 | | | | | | | | | | | | | | |\n", g.name)
			continue
		}
		n := float64(max(g.g.seen, 1))
		fmt.Fprintf(b, "| %s | %d | %.0f | %.1f | %.0f | %.0f | %.0f %% | %.0f %% | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", g.name, g.g.count,
			bench.NewSample(0, g.g.p99).Quantile(0.5), g.g.wal/n/1e6, g.g.fullPages/n, g.g.buffers/n, 100*g.g.audit/n, 100*g.g.autovacuum/n,
			g.g.machine/n, g.g.backends["CPU"]/n, g.g.backends["LWLock:WALWrite"]/n, waits(g.g.backends, "IO:")/n, waits(g.g.backends, "Lock:")/n,
			g.g.meanPressure())
	}
	if len(worst) == 0 {
		return
	}
	b.WriteString("\nThe worst of them:\n\n| minute (UTC) | p99 ms | WAL MB | full pages | checkpoint buffers | audit running | autovacuum of | machine cores busy | backends (most) | pressure ms/s: CPU / memory / IO |\n|---|--:|--:|--:|--:|--:|---|--:|---|--:|\n")
	for _, m := range worst[:min(stallRows, len(worst))] {
		fmt.Fprintf(b, "| %s | %.0f | %.1f | %d | %d | %.0f %% | %s | %.2f | %s | %s |\n", m.At.Format("2006-01-02 15:04"), m.P99Ms, float64(m.WALBytes)/1e6,
			m.FullPages, m.CheckpointBuffers, 100*m.Audit, strings.Join(m.Autovacuum, ", "), m.MachineCores, busiest(m.Backends, 3), pressureOf(m))
	}
}

// waits adds up the backends waiting on events of one type (a prefix such
// as "IO:").
func waits(backends map[string]float64, prefix string) float64 {
	var n float64
	for state, v := range backends {
		if strings.HasPrefix(state, prefix) {
			n += v
		}
	}
	return n
}
