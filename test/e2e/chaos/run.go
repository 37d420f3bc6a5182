package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/fauxqs"
	"github.com/onceflow/onceflow/test/e2e/pgcluster"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// run is one chaos run in progress.
type run struct {
	cfg   Config
	out   io.Writer
	pg    *pgcluster.Cluster
	sqs   *fauxqs.Server
	s     *stack.Stack
	db    *pgxpool.Pool
	dir   string
	tidy  bool // remove dir at the end
	start time.Time

	mu      sync.Mutex
	sources []Source

	paid, refunded     atomic.Int64
	seconds            atomic.Int64 // second payments on a paid order
	refusedMu          sync.Mutex
	refused            map[string]string // PSP payment id → invoice reference the sandbox refuses
	chargebacksMu      sync.Mutex
	chargebacks        []string // PSP payment ids charged back
	kills, sqsRestarts atomic.Int64
	pgRestarts         atomic.Int64
	afterQuiet         func(context.Context, *stack.Stack) error // tests tamper with the result here
}

// Run runs one chaos profile, printing progress to out, and returns what it
// found. An error means the run could not be carried out; a Result that is
// not OK means onceflow broke its promise.
func Run(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	return runWith(ctx, cfg, out, nil)
}

func runWith(ctx context.Context, cfg Config, out io.Writer, afterQuiet func(context.Context, *stack.Stack) error) (Result, error) {
	r := &run{cfg: cfg, out: out, afterQuiet: afterQuiet, refused: map[string]string{}}
	defer r.close()
	if err := r.setUp(ctx); err != nil {
		return Result{}, err
	}
	r.start = time.Now()
	progress := r.report(ctx)
	chaosDone := make(chan error, 1)
	driveCtx, stopDriving := context.WithCancel(ctx)
	defer stopDriving()
	go func() { chaosDone <- r.chaos(driveCtx) }()
	if err := r.drive(driveCtx); err != nil {
		stopDriving()
		<-chaosDone
		progress()
		return Result{}, fmt.Errorf("drive: %w", err)
	}
	if err := <-chaosDone; err != nil {
		progress()
		return Result{}, fmt.Errorf("chaos: %w", err)
	}
	err := r.quiesce(ctx)
	progress()
	if err != nil {
		fmt.Fprintf(r.out, "chaos: the pipeline did not settle: %v\n", err)
	}
	if r.afterQuiet != nil {
		if err := r.afterQuiet(ctx, r.s); err != nil {
			return Result{}, err
		}
	}
	return r.result(ctx)
}

// setUp starts a private PostgreSQL and SQS, then the stack on them.
func (r *run) setUp(ctx context.Context) error {
	r.dir = r.cfg.Dir
	if r.dir == "" {
		dir, err := os.MkdirTemp("", "onceflow-chaos-")
		if err != nil {
			return err
		}
		r.dir, r.tidy = dir, true
	}
	var err error
	if r.pg, err = pgcluster.New(ctx, ""); err != nil {
		return err
	}
	if err := r.pg.Start(ctx); err != nil {
		return err
	}
	dir, err := fauxqs.LocalstackDir()
	if err != nil {
		return err
	}
	if r.sqs, err = fauxqs.New(dir); err != nil {
		return err
	}
	if err := r.sqs.Start(); err != nil {
		return err
	}
	fmt.Fprintf(r.out, "chaos: PostgreSQL on the socket in %s, SQS on %s, logs in %s\n", r.pg.Socket(), r.sqs.Endpoint(), r.dir)
	env := append([]string{
		"RECONCILER_INTERVAL=2s", "RECONCILER_GRACE=20s", "INGEST_POLL_AFTER=5s", "INGEST_POLL_EVERY=3s", "INGEST_POLL_EVERY_MAX=3s", "INGEST_POLL_INTERVAL=1s",
		"INGEST_APPLY_BACKOFF_CAP=5s", "RELAY_BACKOFF_CAP=5s", "RELAY_LEASE_TTL=3s", "SHUTDOWN_TIMEOUT=5s",
		"INVOICER_EMIT_SETTLE=3s", "INVOICER_EMIT_RETRY_CAP=5s", "INVOICER_DGI_POLL_BASE=1s", "INVOICER_DGI_POLL_CAP=5s",
		"INVOICER_PROVIDER_TIMEOUT=3s", "INVOICER_EMIT_LEASE=10s", "INVOICER_PROVIDER_RATE_LIMIT=0",
		"RECONCILER_PROVIDER_TIMEOUT=3s", // the reconciler's audit calls
		"INVOICER_REFUSED_CASE_AFTER=3",  // a refused invoice becomes a case within seconds
		"PSP_SEED=" + fmt.Sprint(r.cfg.Seed), "FISCAL_SEED=" + fmt.Sprint(r.cfg.Seed),
	}, append(r.cfg.PSPEnv, r.cfg.FiscalEnv...)...)
	r.s, err = stack.StartWith(ctx, r.dir, stack.Options{AdminDSN: r.pg.DSN("postgres"), SQSEndpoint: r.sqs.Endpoint(),
		Instances: 2, Reconciler: true, Env: env})
	if err != nil {
		return err
	}
	r.db, err = pgxpool.New(ctx, r.s.Database)
	return err
}

func (r *run) close() {
	if r.db != nil {
		r.db.Close()
	}
	if r.s != nil {
		r.s.Stop()
	}
	if r.sqs != nil {
		r.sqs.Stop()
	}
	if r.pg != nil {
		r.pg.Remove(context.Background())
	}
	if r.tidy {
		_ = os.RemoveAll(r.dir)
	}
}

// report prints a progress line every cfg.Progress; the returned func stops
// it after one last line.
func (r *run) report(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.cfg.Progress)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.line()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		r.line()
	}
}

func (r *run) line() {
	fmt.Fprintf(r.out, "chaos: t=%s paid=%d/%d refunds=%d kills=%d sqs_restarts=%d pg_restarts=%d\n",
		time.Since(r.start).Round(time.Second), r.paid.Load(), r.cfg.Payments, r.refunded.Load(),
		r.kills.Load(), r.sqsRestarts.Load(), r.pgRestarts.Load())
}

func (r *run) add(src Source) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, src)
}

func (r *run) snapshot() []Source {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Source(nil), r.sources...)
}

// errSettle is returned by quiesce when the deadline passes.
var errSettle = errors.New("deadline passed")
