package soak

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/pgtest"
)

// The watcher reads the server each second into the minute of the sample:
// its minute's WAL and full pages are differences to the next minute's
// first sample, so are the machine's busy cores, and the share of samples
// with an audit running is the minute's audit.
func TestWatcherProfilesEachMinuteFromTheServer(t *testing.T) {
	pool := pgtest.NewPool(t, "reconciler")
	ctx := context.Background()
	w := newWatcher(pool)
	minute := time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)
	w.sample(ctx, minute)
	if _, err := pool.Exec(ctx, `INSERT INTO reconciler.runs (part) VALUES ('audit')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE filler AS SELECT g FROM generate_series(1, 10000) g`); err != nil {
		t.Fatal(err)
	}
	burn(t, 200*time.Millisecond)
	w.sample(ctx, minute.Add(30*time.Second))
	w.sample(ctx, minute.Add(time.Minute))
	got := []Minute{{At: minute, P99Ms: 250}, {At: minute.Add(time.Minute), P99Ms: 90}, {At: minute.Add(2 * time.Minute), P99Ms: 80}}
	w.fill(got)
	m := got[0]
	if m.P99Ms != 250 || m.Samples != 2 || m.Audit != 0.5 || m.WALBytes < 100_000 || !m.At.Equal(minute) {
		t.Fatalf("minute %+v, want p99 250 from 2 samples, an audit in one, and the filler's WAL", m)
	}
	if m.MachineCores <= 0 || m.MachineCores > float64(runtime.NumCPU())+0.25 {
		t.Fatalf("minute's machine cores %.2f, want above 0 (this test burned 200 ms of CPU in it) and at most %d", m.MachineCores, runtime.NumCPU())
	}
	if _, err := os.Stat("/proc/pressure/cpu"); err != nil {
		if m.Pressure != nil {
			t.Fatalf("minute's pressure %v on a kernel without /proc/pressure, want none", m.Pressure)
		}
	} else if len(m.Pressure) != 3 || m.Pressure["cpu"] < 0 || m.Pressure["memory"] < 0 || m.Pressure["io"] < 0 || m.Pressure["cpu"] > 1050 || m.Pressure["memory"] > 1050 || m.Pressure["io"] > 1050 {
		t.Fatalf("minute's pressure %v, want cpu, memory and io, each from 0 to 1000 ms a second (and the reads' skew)", m.Pressure)
	}
	if last := got[1]; last.Samples != 1 || last.Audit != 1 || last.WALBytes != 0 {
		t.Fatalf("the last minute %+v, want one sample with the audit running, and no WAL: its next minute has no sample", last)
	}
	if unseen := got[2]; unseen.P99Ms != 80 || unseen.Samples != 0 || unseen.Backends != nil {
		t.Fatalf("a minute without samples %+v, want its p99 alone", unseen)
	}
}

// burn keeps one core busy until this process has used d more CPU time.
func burn(t *testing.T, d time.Duration) {
	t.Helper()
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for end, x := used()+d, 0; used() < end; {
		for i := range 100_000 {
			x ^= i
		}
	}
}

// A minute at twice its window's median minute p99 or more is a stall;
// the README sets the stalls beside the other minutes and lists the worst.
func TestStallsAreSetBesideTheOtherMinutes(t *testing.T) {
	at := time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)
	calm := func(i int, p99 float64) Minute {
		return Minute{At: at.Add(time.Duration(i) * time.Minute), P99Ms: p99, Samples: 60, WALBytes: 2e6, FullPages: 10, MachineCores: 1.2,
			Backends: map[string]float64{"CPU": 0.5, "LWLock:WALWrite": 0.1}, Pressure: map[string]float64{"cpu": 20, "memory": 0, "io": 4}}
	}
	stall := calm(3, 900)
	stall.FullPages, stall.Audit, stall.Autovacuum, stall.MachineCores = 5000, 1, []string{"ingest.outbox"}, 1.95
	stall.Backends = map[string]float64{"CPU": 0.5, "IO:DataFileRead": 2, "Lock:transactionid": 1}
	stall.Pressure = map[string]float64{"cpu": 310, "memory": 150, "io": 40}
	windows := []Window{{Index: 1, Minutes: []Minute{calm(0, 100), calm(1, 120), calm(2, 110), stall, calm(4, 199)}}}
	worst, stalled, other := stalls(windows)
	if len(worst) != 1 || worst[0].P99Ms != 900 || stalled.count != 1 || other.count != 4 {
		t.Fatalf("worst %v, stalled %d, other %d; want the 900 ms minute alone stalled", worst, stalled.count, other.count)
	}
	var b bytes.Buffer
	stallTable(&b, windows)
	for _, want := range []string{
		"| stalled | 1 | 900 | 2.0 | 5000 | 0 | 100 % | 100 % | 1.95 | 0.50 | 0.00 | 2.00 | 1.00 | 310 | 150 | 40 |",
		"| other | 4 | 110 | 2.0 | 10 | 0 | 0 % | 0 % | 1.20 | 0.50 | 0.10 | 0.00 | 0.00 | 20 | 0 | 4 |",
		"| 2026-12-05 15:03 | 900 | 2.0 | 5000 | 0 | 100 % | ingest.outbox | 1.95 | IO:DataFileRead 2.00, Lock:transactionid 1.00, CPU 0.50 | 310 / 150 / 40 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stall table lacks %q:\n%s", want, b.String())
		}
	}

	// A run recorded without pressure (a kernel without it, an older
	// results.json) says so rather than 0.
	for i := range windows[0].Minutes {
		windows[0].Minutes[i].Pressure = nil
	}
	b.Reset()
	stallTable(&b, windows)
	for _, want := range []string{
		"| stalled | 1 | 900 | 2.0 | 5000 | 0 | 100 % | 100 % | 1.95 | 0.50 | 0.00 | 2.00 | 1.00 | – | – | – |",
		"| IO:DataFileRead 2.00, Lock:transactionid 1.00, CPU 0.50 |  |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stall table without pressure lacks %q:\n%s", want, b.String())
		}
	}
}
