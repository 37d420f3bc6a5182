package bench

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

func TestSampleQuantiles(t *testing.T) {
	t.Parallel()
	lat := make([]float64, 0, 100)
	for i := 100; i >= 1; i-- {
		lat = append(lat, float64(i))
	}
	s := NewSample(4*time.Second, lat)
	tests := []struct {
		name      string
		got, want float64
	}{
		{"p50", s.Quantile(0.5), 50},
		{"p99", s.Quantile(0.99), 99},
		{"max", s.Quantile(1), 100},
		{"rate", s.Rate(), 25},
		{"empty p99", NewSample(time.Second, nil).Quantile(0.99), 0},
		{"empty window rate", NewSample(0, lat).Rate(), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Fatalf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// Pooled windows keep every latency and add up their spans, so the rate
// is the whole span's; a window at the goal meets it.
func TestPoolAndWindowsWithin(t *testing.T) {
	t.Parallel()
	s := Pool(NewSample(time.Second, []float64{3, 1}), NewSample(time.Second, []float64{2}), NewSample(2*time.Second, []float64{4, 5, 6}))
	if s.Window != 4*time.Second || s.Count() != 6 || s.Rate() != 1.5 || s.Latencies[0] != 1 || s.Quantile(1) != 6 {
		t.Fatalf("pooled = %+v, want 6 latencies sorted over 4 s", s)
	}
	if got := joinMillis([]float64{1.25, math.Inf(1), -1}); got != "1.2, shed, shed ms" {
		t.Fatalf("joinMillis = %q, want windows that shed load named so", got)
	}
	if got := median([]float64{0.7, 0.9, 0.8}); got != 0.8 {
		t.Fatalf("median of 0.7, 0.9, 0.8 = %v, want 0.8", got)
	}
	if got := WindowsWithin([]float64{20, math.Inf(1), 3, 40}, 20); got != 0.5 {
		t.Fatalf("WindowsWithin = %v, want 0.5 (20 meets a 20 ms goal, 20.01 does not)", got)
	}
}

func TestResultsJSONHasEveryKey(t *testing.T) {
	t.Parallel()
	r := Results{PGCeilingTPS: 1000, IngestRPS: 500, OpenRate: 1000, OpenP99Repeats: []float64{8, 25, 19, math.Inf(1)}, OpenShed: 3, BacklogSeconds: map[int]float64{1000: 0.1, 100_000: 8}, Config: Defaults()}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		"pg_ceiling_tps", "ingest_rps", "ingest_p50_ms", "ingest_p99_ms", "ingest_ratio", "ingest_ratio_by_round", "ingest_p99_ms_at_1000rps", "ingest_start_lag_p99_ms_at_1000rps",
		"sqs_raw_mps", "relay_mps", "relay_ratio", "relay_ratio_by_round", "e2e_docs_per_s", "e2e_p50_ms", "e2e_p99_ms",
		"backlog_1k_s", "backlog_100k_s", "config", "ingest_p99_ms_at_1000rps_by_window", "ingest_p99_windows_met_at_1000rps",
	} {
		if _, ok := obj[key]; !ok {
			t.Errorf("results.json lacks %q", key)
		}
	}
	if met := obj["ingest_p99_windows_met_at_1000rps"].(float64); met != 0.5 {
		t.Errorf("windows met = %v, want 2 of 4 (8 and 19 ms within 20; 25 not, nor the window that shed load)", met)
	}
	if w := obj["ingest_p99_ms_at_1000rps_by_window"].([]any); len(w) != 4 || w[3] != -1.0 || obj["ingest_shed_at_1000rps"] != 3.0 {
		t.Errorf("windows = %v, shed %v; want the shedding window as -1 and 3 shed", w, obj["ingest_shed_at_1000rps"])
	}
	if obj["config"].(map[string]any)["duration"] != "15s" {
		t.Errorf("config = %v, want readable durations", obj["config"])
	}
}

func TestSizeLabel(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1000: "1k", 100_000: "100k", 2500: "2500", 500: "500"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

// The ceiling must run the statement ingest runs: read from the repository
// and rewritten for pgx with every parameter bound.
func TestReceiptStatementIsIngests(t *testing.T) {
	t.Parallel()
	root, err := stack.Root()
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReceiptStatement(root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(st.SQL, "INSERT INTO ingest.webhook_receipts") || !strings.Contains(st.SQL, "$1::uuid") || !strings.Contains(st.SQL, "unnest($3::text[])") ||
		!strings.HasSuffix(st.SQL, "RETURNING id, scope, dedupe_key, received_at;") || strings.Contains(st.SQL, "sqlc.") {
		t.Fatalf("statement:\n%s\nwant ingest's receipt insert with pgx parameters", st.SQL)
	}
	if _, err := st.Args(receiptParams("evt_1", []byte("{}"))); err != nil {
		t.Fatal(err)
	}
}

func TestParseQuery(t *testing.T) {
	t.Parallel()
	file := "-- name: A :one\n-- a comment\nSELECT @x, @y, @x::int, sqlc.narg(z)::uuid, sqlc.arg(y);\n\n-- name: B :exec\nDELETE FROM t;\n"
	st, err := ParseQuery(file, "A")
	if err != nil {
		t.Fatal(err)
	}
	if st.SQL != "SELECT $1, $2, $1::int, $3::uuid, $2;" || len(st.Params) != 3 {
		t.Fatalf("got %q %v", st.SQL, st.Params)
	}
	if _, err := st.Args(map[string]any{"x": 1}); err == nil {
		t.Fatal("Args without @y: want an error naming it")
	}
	if _, err := ParseQuery(file, "C"); err == nil {
		t.Fatal("ParseQuery of a missing query: want an error")
	}
}

func TestClosedLoopCountsOnlyTheWindow(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	op := func(context.Context) error { calls.Add(1); time.Sleep(time.Millisecond); return nil }
	s, err := ClosedLoop(context.Background(), 2, 50*time.Millisecond, 100*time.Millisecond, op)
	if err != nil {
		t.Fatal(err)
	}
	if s.Count() == 0 || int64(s.Count()) >= calls.Load() {
		t.Fatalf("kept %d of %d calls; want some, and fewer than all (the warm-up is left out)", s.Count(), calls.Load())
	}
}

func TestLoopsStopOnAnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	op := func(context.Context) error { return boom }
	if _, err := ClosedLoop(context.Background(), 2, 0, time.Second, op); !errors.Is(err, boom) {
		t.Errorf("closed loop: got %v, want boom", err)
	}
	if _, _, err := OpenLoop(context.Background(), 100, 0, time.Second, op); !errors.Is(err, boom) {
		t.Errorf("open loop: got %v, want boom", err)
	}
}

func TestOpenLoopKeepsItsSchedule(t *testing.T) {
	t.Parallel()
	op := func(context.Context) error { time.Sleep(20 * time.Millisecond); return nil }
	s, lag, err := OpenLoop(context.Background(), 200, 0, 200*time.Millisecond, op)
	if err != nil {
		t.Fatal(err)
	}
	// 40 operations are due in the window; each takes 20 ms and they overlap.
	if s.Count() != 40 || lag.Count() != 40 {
		t.Fatalf("kept %d operations and %d start lags, want 40 of each", s.Count(), lag.Count())
	}
	// Each is timed from when it was due, so it cannot take less than its
	// 20 ms, and it starts before it ends.
	if s.Quantile(0) < 20 || lag.Quantile(1) >= s.Quantile(1) {
		t.Fatalf("latency min %.1f ms, start lag max %.1f ms against latency max %.1f ms", s.Quantile(0), lag.Quantile(1), s.Quantile(1))
	}
}

// A timeline's latencies are each payment's time through, over the span
// from the first webhook to the last authorization.
func TestTimelineLatencies(t *testing.T) {
	t.Parallel()
	s := Timeline{Received: []float64{0, 0.5, 1}, Authorized: []float64{0.25, 2.5, 1.5}}.Latencies()
	if s.Window != 2500*time.Millisecond || !slices.Equal(s.Latencies, []float64{250, 500, 2000}) {
		t.Fatalf("latencies = %+v, want 250, 500 and 2000 ms over 2.5 s", s)
	}
}

// Times are counted in the bin they fall in, up to the last's, as a rate
// per second; bins are the narrowest that cut the span into 50 or fewer.
func TestRates(t *testing.T) {
	t.Parallel()
	if got, want := Rates([]float64{0, 0.99, 1, 3.5, 3.2}, 1), []float64{2, 1, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("Rates by the second = %v, want %v", got, want)
	}
	if got, want := Rates([]float64{0, 0.1, 0.3, 0.4}, 0.5), []float64{8}; !slices.Equal(got, want) {
		t.Fatalf("Rates by the half second = %v, want %v (4 in half a second)", got, want)
	}
	if got := Rates(nil, 1); len(got) != 1 || got[0] != 0 {
		t.Fatalf("Rates(nil) = %v, want one empty bin", got)
	}
	for span, want := range map[float64]float64{2.5: 0.05, 2.6: 0.1, 8: 0.2, 60: 2, 1e6: 60} {
		if got := BinWidth(span); got != want {
			t.Errorf("BinWidth(%g) = %g, want %g", span, got, want)
		}
	}
}

func TestWriteMakesJSONAndPlot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := Results{OpenRate: 1000, BacklogSeconds: map[int]float64{1000: 0.1}, Config: Defaults()}
	plots := Plots{Burst: NewSample(time.Second, []float64{120, 80, 95, 300}), Steady: NewSample(time.Second, []float64{20, 25}),
		Timeline: Timeline{Received: []float64{0, 0.2, 1.1}, Authorized: []float64{0.9, 1.5, 2.7}}}
	if err := Write(dir, r, plots); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"results.json", "README.md", "e2e_latency.png", "e2e_steady_latency.png", "e2e_throughput.png"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestConfigCheckNamesTheFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		flag   string
		change func(*Config)
	}{
		{"-duration", func(c *Config) { c.Duration = 0 }},
		{"-concurrency", func(c *Config) { c.Concurrency = 0 }},
		{"-rate", func(c *Config) { c.Rate = 0 }},
		{"-payments", func(c *Config) { c.Payments = 0 }},
		{"-open-repeats", func(c *Config) { c.OpenRepeats = 0 }},
		{"-open-window", func(c *Config) { c.OpenWindow = 0 }},
		{"-backlogs", func(c *Config) { c.Backlogs = []int{0} }},
		{"-env", func(c *Config) { c.Env = []string{"NOEQUALS"} }},
		{"-stages", func(c *Config) { c.Stages = []string{"pipeline", "nope"} }},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			c := Defaults()
			tt.change(&c)
			err := c.Check()
			if err == nil || !strings.HasPrefix(err.Error(), tt.flag+":") {
				t.Fatalf("got %v, want an error starting with %s", err, tt.flag)
			}
		})
	}
	if err := Defaults().Check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

func TestCoresCountsReapedChildren(t *testing.T) {
	t.Parallel()
	// The postmaster (40) reaps backend 41, which had used 5 s at the first
	// reading and 5.8 s when it exited, and worker 44, which started and
	// exited between the readings after 0.3 s: the reaped time rises by
	// 6.1 s, of which 0.8 s and 0.3 s fall in the stage.
	before := CPUTimes{
		{"machine", 0, false}: 10, {"postgres", 40, false}: 1, {"postgres", 40, true}: 20,
		{"postgres", 41, false}: 5, {"postgres", 42, false}: 2,
	}
	after := CPUTimes{
		{"machine", 0, false}: 14, {"postgres", 40, false}: 1.1, {"postgres", 40, true}: 26.1,
		{"postgres", 42, false}: 2.6,
	}
	got := Cores(before, after, 1)
	want := map[string]float64{"machine": 4, "postgres": 0.1 + 0.8 + 0.3 + 0.6, "other": 4 - 1.8}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if d := got[k] - w; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: got %v, want %v", k, got[k], w)
		}
	}
}

func TestCoresSplitsTheMachine(t *testing.T) {
	t.Parallel()
	// Backend 41 exits during the stage and 43 starts in it: the first
	// counts nothing, the second all it used.
	before := CPUTimes{{"machine", 0, false}: 10, {"ingest-1", 7, false}: 1, {"postgres", 41, false}: 5, {"postgres", 42, false}: 2}
	after := CPUTimes{{"machine", 0, false}: 13, {"ingest-1", 7, false}: 2, {"postgres", 42, false}: 2.6, {"postgres", 43, false}: 0.4, {"relay-1", 9, false}: 0.001}
	got := Cores(before, after, 2)
	want := map[string]float64{"machine": 1.5, "ingest-1": 0.5, "postgres": 0.5, "other": 0.4995}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if d := got[k] - w; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: got %v, want %v", k, got[k], w)
		}
	}
}

// A window names the tables autovacuum was on at either reading and those
// whose autovacuum or autoanalyze count rose between them, once each.
func TestWindowServerNamesTheTablesAutovacuumWasOn(t *testing.T) {
	t.Parallel()
	before := serverCounters{wal: 100, fpi: 2, autovacuums: map[string]int64{"ingest.outbox": 3, "ingest.orders": 1},
		autovacuuming: []string{"ingest.webhook_receipts"}}
	after := serverCounters{wal: 900, fpi: 5, autovacuums: map[string]int64{"ingest.outbox": 4, "ingest.orders": 1, "ingest.payments": 1},
		autovacuuming: []string{"ingest.webhook_receipts"}}
	w := windowServer(before, after)
	if want := []string{"ingest.outbox", "ingest.payments", "ingest.webhook_receipts"}; !slices.Equal(w.Autovacuum, want) || w.WALBytes != 800 || w.FullPages != 3 {
		t.Errorf("window %+v, want 800 WAL bytes, 3 full pages and autovacuum on %v", w, want)
	}
	if quiet := (serverCounters{autovacuums: after.autovacuums}); windowServer(quiet, quiet).Autovacuum != nil {
		t.Errorf("a window with no autovacuum names %v", windowServer(quiet, quiet).Autovacuum)
	}
}
