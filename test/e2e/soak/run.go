package soak

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/test/e2e/bench"
	"github.com/onceflow/onceflow/test/e2e/pgcluster"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// Run starts the stack with the soak's settings, offers cfg.Documents
// payments at cfg.Rate, printing a line per window to out, then the
// verdict; it writes results.json, the plots and README.md into cfg.Out
// and returns the figures. Until then, cfg.Out/partial.json holds the
// windows so far, rewritten after each, so a run that fails or is stopped
// hours in keeps what it measured; a finished run removes it. An error
// names what failed; the processes' logs are kept then, and when the
// verdict is not flat.
func Run(ctx context.Context, cfg Config, out io.Writer) (Results, error) {
	if err := cfg.Check(); err != nil {
		return Results{}, err
	}
	s := &soak{cfg: cfg, out: out, began: time.Now()}
	res := Results{Config: cfg, Env: cfg.env(), Pruned: cfg.pruned(), StartedAt: s.began.UTC(), CPUs: runtime.NumCPU()}
	err := s.setUp(ctx, res.Env)
	if err == nil {
		res.Autovacuum = s.autovacuum
		s.partial = res
		res.Windows, err = s.drive(ctx)
	}
	if err == nil {
		res.Verdict = judge(cfg, res.Windows)
	}
	s.tearDown(err == nil && res.Verdict.OK)
	if err != nil {
		return Results{}, err
	}
	fmt.Fprintf(out, "soak: verdict, last window against the first:\n%s\n", res.Verdict)
	if err := Write(cfg.Out, res); err != nil {
		return Results{}, err
	}
	if err := os.Remove(filepath.Join(cfg.Out, PartialFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Results{}, err
	}
	return res, nil
}

// PartialFile is the windows of a run in progress, in cfg.Out.
const PartialFile = "partial.json"

// savePartial writes the run's figures with the windows so far to
// PartialFile; a failure to is printed, not fatal to the run.
func (s *soak) savePartial(windows []Window) {
	r := s.partial
	r.Windows = windows
	b, err := jsonIndent(r)
	if err == nil {
		err = os.MkdirAll(s.cfg.Out, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(s.cfg.Out, PartialFile), b, 0o644)
	}
	if err != nil {
		s.progress("could not save the windows so far: %v", err)
	}
}

// soak is one run in progress.
type soak struct {
	cfg    Config
	out    io.Writer
	began  time.Time
	dir    string // binaries and logs
	prefix string // the run's merchant order ids start with it
	s      *stack.Stack
	pg     *pgcluster.Cluster // with -pg private
	db     *pgxpool.Pool      // the soak's own queries
	// autovacuum is the server's setting, "on" or "off".
	autovacuum string
	// walinspect is whether the server has pg_walinspect, to read each
	// window's WAL by table (walSample).
	walinspect bool
	// partial is the run's Results without windows, for savePartial.
	partial Results
	// watch samples the server every second (stalls.go).
	watch *watcher
}

func (s *soak) progress(format string, args ...any) {
	fmt.Fprintf(s.out, "soak: %7.1fs  %s\n", time.Since(s.began).Seconds(), fmt.Sprintf(format, args...))
}

// setUp starts the private cluster (with -pg private), builds and starts
// the stack, the reconciler serving, with env, and reads whether the
// server autovacuums.
func (s *soak) setUp(ctx context.Context, env []string) error {
	var err error
	if s.dir, err = os.MkdirTemp("", "onceflow-soak-"); err != nil {
		return err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	s.prefix = "soak-" + hex.EncodeToString(b) + "-"
	opts := stack.Options{Reconciler: true, Env: env}
	if s.cfg.PG == PGPrivate {
		if s.pg, err = pgcluster.New(ctx, ""); err != nil {
			return err
		}
		if err := s.pg.Configure(s.cfg.PGSettings...); err != nil {
			return fmt.Errorf("-pg-settings: %w", err)
		}
		if err := s.pg.Start(ctx); err != nil {
			return err
		}
		opts.AdminDSN = s.pg.DSN("postgres")
		opts.ServiceRoles = true // its statistics, and the CPU by role, tell the services apart
		s.progress("PostgreSQL: a private cluster on the socket in %s, settings %v", s.pg.Socket(), s.cfg.PGSettings)
	}
	s.progress("building and starting the stack (logs in %s); settings %v", s.dir, env)
	if s.s, err = stack.StartWith(ctx, s.dir, opts); err != nil {
		return fmt.Errorf("start the stack: %w", err)
	}
	if s.db, err = bench.OpenPool(ctx, s.s.Database, 2, readSettings...); err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		s.progress("no WAL by table: %v", err)
	} else {
		s.walinspect = true
	}
	if err := s.db.QueryRow(ctx, "SHOW autovacuum").Scan(&s.autovacuum); err != nil {
		return fmt.Errorf("read autovacuum: %w", err)
	}
	if s.autovacuum != "on" {
		s.progress("autovacuum is %s on this server: a pruned row's space is never reused, so the pruned tables' sizes grow whatever the retention", s.autovacuum)
	}
	return nil
}

// readSettings keep the soak's own reads small beside the pipeline they
// measure: one core and no compiling (no parallel workers, no JIT), and
// rows found by key, with no hash or merge join over a whole table, so a
// slice's latencies cost the same at the millionth document as at the
// first. (A hash join read every payment at each slice.)
var readSettings = []string{"max_parallel_workers_per_gather=0", "jit=off", "enable_hashjoin=off", "enable_mergejoin=off"}

// tearDown stops the stack (dropping its database), deletes its queues and
// the private cluster, and, after a good and flat run, removes the logs.
func (s *soak) tearDown(ok bool) {
	if s.db != nil {
		s.db.Close()
	}
	if s.s != nil {
		s.s.Stop()
		var queues []string
		for _, q := range s.s.Queues {
			queues = append(queues, q, q+"-dlq")
		}
		bench.DeleteQueues(queues)
	}
	if s.pg != nil {
		s.pg.Remove(context.Background())
	}
	if ok {
		_ = os.RemoveAll(s.dir)
	} else if s.dir != "" {
		fmt.Fprintf(s.out, "soak: logs kept in %s\n", s.dir)
	}
}

// drive offers the payments and, beside them, ends each window once all
// its invoices are authorized.
func (s *soak) drive(ctx context.Context) ([]Window, error) {
	buyer, err := bench.CreateBuyer(ctx, s.s)
	if err != nil {
		return nil, err
	}
	cpu := s.readCPU
	first, err := read(ctx, s.db, s.metrics(), cpu, nil)
	if err != nil {
		return nil, err
	}
	s.watch = newWatcher(s.db)
	watching, stop := context.WithCancel(ctx)
	defer stop()
	go s.watch.run(watching)
	offered := make([]atomic.Int64, s.cfg.Windows())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return bench.Paced(gctx, s.cfg.Documents, s.cfg.Rate, func(ctx context.Context, i int) error {
			order := orderID(s.prefix, i)
			if err := bench.CreateOrder(ctx, s.s, order, buyer); err != nil {
				return fmt.Errorf("create order %s: %w", order, err)
			}
			if err := bench.Pay(ctx, s.s, order); err != nil {
				return fmt.Errorf("pay order %s: %w", order, err)
			}
			offered[s.cfg.window(i)].Add(1)
			return nil
		})
	})
	s.progress("offering %d payments at %d/s, %d windows of %d (about %s each)",
		s.cfg.Documents, s.cfg.Rate, s.cfg.Windows(), s.cfg.Window, s.cfg.WindowTime())
	var windows []Window
	g.Go(func() error {
		pruned, prev := prunedSet(s.cfg.pruned()), first
		for k := range s.cfg.Windows() {
			w, end, err := s.window(gctx, k, &offered[k], first.at, prev)
			if err != nil {
				return fmt.Errorf("window %d: %w", k+1, err)
			}
			windows, prev = append(windows, w), end
			s.savePartial(windows)
			s.progress("%s", w.Line(s.cfg.Windows(), pruned))
			if line := headroom(w.CPUMsPerDoc["machine"], s.cfg.Rate, runtime.NumCPU(), s.cfg.Documents); k == 0 && line != "" {
				s.progress("%s", line) // the run goes on: its figures still say where the time went
			}
			s.progress("window %d largest tables: %s", w.Index, w.Sizes(6))
			if len(w.WALSample) > 0 {
				s.progress("window %d WAL by table (its last %d MB): %s", w.Index, s.cfg.WALSample>>20, walLine(w.WALSample, 6))
			}
		}
		return nil
	})
	err = g.Wait()
	for _, w := range windows {
		s.watch.fill(w.Minutes)
	}
	return windows, err
}

// metrics is the reconciler's metrics page.
func (s *soak) metrics() string { return s.s.AdminURL("reconciler-1") + "/metrics" }

// SliceDocs is how many of a window's payments the soak reads at a time
// by default (Config.LatencySlice), once they are all invoiced: it reads a
// window's latencies slice by slice as the run goes, so its reads cost
// about the same every half minute. Read at once at the window's end, a
// window's join took both cores for about 10 s at 500,000 documents, a
// stall of the pipeline at the start of the next window.
const SliceDocs = 5_000

// window reads window k slice by slice (Config.slice), each once its
// payments are all offered and invoiced, then reads its figures; start is
// when the first payment was offered.
func (s *soak) window(ctx context.Context, k int, offered *atomic.Int64, start time.Time, prev *reading) (Window, *reading, error) {
	var rows latencyRows
	for lo := 0; lo < s.cfg.Window; lo += s.cfg.slice() {
		hi := min(lo+s.cfg.slice(), s.cfg.Window)
		for offered.Load() < int64(hi) {
			if !backoff.Sleep(ctx, 200*time.Millisecond) {
				return Window{}, nil, ctx.Err()
			}
		}
		from, to := orderID(s.prefix, k*s.cfg.Window+lo), orderID(s.prefix, k*s.cfg.Window+hi)
		if err := s.waitAuthorized(ctx, from, to, hi-lo); err != nil {
			return Window{}, nil, err
		}
		if err := rows.read(ctx, s.db, from, to); err != nil {
			return Window{}, nil, err
		}
	}
	lat := rows.latency()
	if lat.all.Count() != s.cfg.Window {
		return Window{}, nil, fmt.Errorf("%d latencies for %d documents: receipts pruned before they were read? (INGEST_RECEIPT_RETENTION must outlast a window)", lat.all.Count(), s.cfg.Window)
	}
	end, err := read(ctx, s.db, s.metrics(), s.readCPU, prev)
	if err != nil {
		return Window{}, nil, err
	}
	w := newWindow(k, s.cfg.Window, start, prev, end, lat)
	w.Minutes = minutesOf(lat)
	s.watch.fill(w.Minutes) // again at the run's end, when each minute's next is known
	if w.WALSample, err = s.walSample(ctx, prev, end, w.WALBytesPerDoc); err != nil {
		s.progress("window %d: no WAL by table: %v", w.Index, err) // a diagnosis, not a figure the verdict needs
	}
	return w, end, nil
}

// WALSampleBytes is how much of each window's WAL, its last, the soak reads
// by table by default (Config.WALSample): at 10 to 20 KB a document, some
// hundreds of documents. Reading it takes one core at the window's end,
// about 5 s for 32 MB, the size runs recorded before Config.WALSample read.
const WALSampleBytes = 8 << 20

// walSample reads where the last Config.WALSample bytes of the window from
// prev to end went, by table, per document (a window's documents each wrote
// perDoc bytes); nothing when the server has no pg_walinspect or the
// sample is 0.
func (s *soak) walSample(ctx context.Context, prev, end *reading, perDoc float64) ([]bench.TableWAL, error) {
	if !s.walinspect || perDoc <= 0 || s.cfg.WALSample <= 0 {
		return nil, nil
	}
	var from string
	var bytes float64
	err := s.db.QueryRow(ctx, `SELECT f::text, pg_wal_lsn_diff($2::pg_lsn, f)::float8
FROM (SELECT greatest($1::pg_lsn, $2::pg_lsn - $3::numeric) AS f) s`, prev.flushed, end.flushed, s.cfg.WALSample).Scan(&from, &bytes)
	if err != nil {
		return nil, fmt.Errorf("the WAL sample's start: %w", err)
	}
	return bench.ReadWALByTable(ctx, s.db, from, end.flushed, bytes/perDoc)
}

// waitAuthorized polls once a second until the n invoices of the orders
// in [from, to) are all authorized, for at most cfg.Timeout.
func (s *soak) waitAuthorized(ctx context.Context, from, to string, n int) error {
	began := time.Now()
	for {
		got, err := authorized(ctx, s.db, from, to)
		if err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		if time.Since(began) > s.cfg.Timeout {
			return fmt.Errorf("%d of the %d invoices of orders %s to %s authorized %s after their last payment was offered (-timeout)", got, n, from, to, s.cfg.Timeout)
		}
		if !backoff.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// jsonIndent encodes v indented, with a final newline.
func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}

// readCPU reads the CPU used so far by each process of the run; with -pg
// private PostgreSQL's is its cluster's alone (see bench.ReadCPU).
func (s *soak) readCPU() bench.CPUTimes {
	postmaster := 0
	if s.pg != nil {
		postmaster = s.pg.PID()
	}
	return bench.ReadCPU(s.s, postmaster)
}
