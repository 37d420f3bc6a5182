package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/procfs"

	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/test/e2e/pgcluster"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// run is one benchmark run in progress.
type run struct {
	cfg   Config
	out   io.Writer
	began time.Time
	dir   string             // binaries, logs and the sources file
	tag   string             // makes event ids, order ids and queue names unique to the run
	pg    *pgcluster.Cluster // the stack's PostgreSQL, private to the run
	s     *stack.Stack
	db    *pgxpool.Pool // the harness's queries
	// ceiling holds one connection per closed-loop worker for the whole
	// run, so the CPU its backends use is read before and after the stage.
	ceiling *pgxpool.Pool
	sqs     *sqs.Client
	client  *http.Client
	queues  []string // queues to delete at the end
	plots   Plots
}

func (r *run) progress(format string, args ...any) {
	fmt.Fprintf(r.out, "bench: %5.1fs  %s\n", time.Since(r.began).Seconds(), fmt.Sprintf(format, args...))
}

// pgSettings are the bench's PostgreSQL's settings over pgcluster's: the
// checkpoint settings asked of production (pgcluster.Recommended), fsync
// on, as a server that keeps its data (and as make test's), and
// pg_stat_statements loaded, to count the services' statements, and their
// planning, exactly.
// With PostgreSQL's own checkpoint settings the WAL of the stages before
// started a checkpoint in the open loop's third window, and the window of
// its full-page images (2,788-2,863 in five seconds) took 14-27 ms at p99.
var pgSettings = append(slices.Clip(pgcluster.Recommended), "fsync=on", "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track_utility=on",
	"pg_stat_statements.track_planning=on")

// startPostgres starts the run's own PostgreSQL cluster (pgSettings): the
// shared server cannot load pg_stat_statements without a restart.
// pspRetries has the PSP sandbox retry a refused webhook on dLocal's own
// schedule, an hour compressed into about a second (71 s over 12 attempts),
// as a real PSP keeps retrying for days. The stack's default (every 200 ms)
// gave a webhook up after 2.4 s, which a burst refused busy (503) for
// longer outlasts: the bench then waited out its timeout for a payment
// only the poller would find, 10 minutes later.
const pspRetries = "PSP_TIME_SCALE=0.0003"

func (r *run) startPostgres(ctx context.Context) error {
	var err error
	if r.pg, err = pgcluster.New(ctx, ""); err != nil {
		return fmt.Errorf("create the bench's PostgreSQL: %w", err)
	}
	if err := r.pg.Configure(pgSettings...); err != nil {
		return err
	}
	if err := r.pg.Start(ctx); err != nil {
		return fmt.Errorf("start the bench's PostgreSQL: %w", err)
	}
	return nil
}

// setUp builds and starts the stack on a fresh database of its own
// PostgreSQL, each service as its own role and ingest serving the bench
// source, and opens the harness's own clients.
func (r *run) setUp(ctx context.Context) error {
	var err error
	if r.dir, err = os.MkdirTemp("", "onceflow-bench-"); err != nil {
		return err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	r.tag = hex.EncodeToString(b)
	sources, err := writeSources(r.dir)
	if err != nil {
		return err
	}
	if err := r.startPostgres(ctx); err != nil {
		return err
	}
	r.progress("building and starting the stack (logs in %s; PostgreSQL on the socket in %s; extra settings %v)", r.dir, r.pg.Socket(), r.cfg.Env)
	env := append([]string{"INGEST_WEBHOOK_SOURCES_FILE=" + sources, pspRetries}, r.cfg.Env...)
	r.s, err = stack.StartWith(ctx, r.dir, stack.Options{AdminDSN: r.pg.DSN("postgres"), Env: env, ServiceRoles: true})
	if err != nil {
		return fmt.Errorf("start the stack: %w", err)
	}
	for _, q := range r.s.Queues {
		r.queues = append(r.queues, q, q+"-dlq")
	}
	if r.db, err = OpenPool(ctx, r.s.Database, 4); err != nil {
		return err
	}
	if r.ceiling, err = OpenPool(ctx, r.s.Database, r.cfg.Concurrency); err != nil {
		return err
	}
	for _, ext := range []string{"pg_stat_statements", "pg_walinspect"} {
		if _, err := r.db.Exec(ctx, "CREATE EXTENSION "+ext); err != nil {
			return fmt.Errorf("create %s: %w", ext, err)
		}
	}
	if r.sqs, err = sqsclient.NewClient(ctx, region(), os.Getenv("AWS_ENDPOINT_URL_SQS")); err != nil {
		return err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 2048, 2048
	r.client = &http.Client{Transport: transport, Timeout: 30 * time.Second}
	return nil
}

// OpenPool connects conns connections to the stack's database and keeps
// them open, each with the session settings given (name=value).
func OpenPool(ctx context.Context, dsn string, conns int, settings ...string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = int32(conns), int32(conns)
	for _, kv := range settings {
		name, value, _ := strings.Cut(kv, "=")
		cfg.ConnConfig.RuntimeParams[name] = value
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the stack's database: %w", err)
	}
	return pool, nil
}

func region() string {
	if v := os.Getenv("AWS_REGION"); v != "" {
		return v
	}
	return "us-east-1"
}

// tearDown stops the stack and its PostgreSQL, deletes the run's queues
// (the emulator is shared) and, after a good run, the logs.
func (r *run) tearDown(ok bool) {
	for _, p := range []*pgxpool.Pool{r.db, r.ceiling} {
		if p != nil {
			p.Close()
		}
	}
	if r.s != nil {
		r.s.Stop()
	}
	if r.pg != nil {
		r.pg.Remove(context.Background())
	}
	DeleteQueues(r.queues)
	if ok {
		_ = os.RemoveAll(r.dir)
	} else if r.dir != "" {
		fmt.Fprintf(r.out, "bench: logs kept in %s\n", r.dir)
	}
}

// DeleteQueues deletes the named queues at AWS_ENDPOINT_URL_SQS (the
// emulator is shared), within 10 s; a queue that is gone already, or an
// endpoint that does not answer, is left as it is.
func DeleteQueues(names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := sqsclient.NewClient(ctx, region(), os.Getenv("AWS_ENDPOINT_URL_SQS"))
	if err != nil {
		return
	}
	for _, q := range names {
		if url, err := sqsclient.QueueURL(ctx, c, q); err == nil {
			_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		}
	}
}

// readCPU reads the CPU used so far by each process of the run (see
// ReadCPU).
func (r *run) readCPU() CPUTimes { return ReadCPU(r.s, r.pg.PID()) }

// notificationsRefused reads how many of the PSP sandbox's notification
// attempts so far were not accepted (ingest refused them busy, or any
// answer but 2xx); the sandbox retries each.
func (r *run) notificationsRefused(ctx context.Context) (int64, error) {
	st, err := r.s.PSPStats(ctx)
	return st.NotificationsFailed, err
}

// stage is one measurement: it fills its figures into the results. A
// stage that settles first waits for ingest's apply worker to catch up with
// the receipts of the stage before, so it does not pay for them; every
// stage starts once the disk has written what was dirty (writeBack).
type stage struct {
	name   string
	settle bool
	run    func(context.Context, *Results) error
}

// stageNamesInOrder are the stages measure runs, in its order; -stages
// picks among them.
var stageNamesInOrder = []string{"steady", "pipeline", "relay", "ingest_open", "ingest_closed"}

// measure runs the stages (all, or those of Config.Stages) in an order that keeps them apart: the pipeline
// on a clean stack; the relay and raw SQS with the invoicer stopped, so
// nothing consumes the queue the backlog goes to; then ingest's stages,
// each after the apply worker has caught up with the last one's receipts
// (smallest load first, so the waits stay short).
func (r *run) measure(ctx context.Context) (Results, error) {
	res := Results{
		Config: r.cfg, StartedAt: r.began.UTC(), CPUs: runtime.NumCPU(), E2EPayments: r.cfg.Payments, OpenRate: r.cfg.Rate,
		BacklogSeconds: map[int]float64{}, CPU: map[string]map[string]float64{}, PGActive: map[string][]ActiveStatement{},
	}
	stages := []stage{
		{"steady", false, r.steady}, {"pipeline", false, r.pipeline}, {"relay", false, r.relay},
		{"ingest_open", true, r.ingestOpen},
		{"ingest_closed", false, r.ingestClosed}, // each of its parts settles (ingestPart)
	}
	for _, st := range stages {
		if len(r.cfg.Stages) > 0 && !slices.Contains(r.cfg.Stages, st.name) {
			continue
		}
		if err := r.runStage(ctx, st, &res); err != nil {
			return res, fmt.Errorf("%s: %w", st.name, err)
		}
	}
	return res, nil
}

// runStage runs one stage, reading the CPU each process used and sampling
// what PostgreSQL ran meanwhile.
func (r *run) runStage(ctx context.Context, st stage, res *Results) error {
	if err := r.quiet(ctx, st.name, st.settle); err != nil {
		return err
	}
	before, began := r.readCPU(), time.Now()
	sampled := make(chan []ActiveStatement, 1)
	sampling, stopSampling := context.WithCancel(ctx)
	go func() { sampled <- pgSampler{db: r.db, interval: 20 * time.Millisecond}.run(sampling, 6) }()
	err := st.run(ctx, res)
	stopSampling()
	active := <-sampled
	if err != nil {
		return err
	}
	took := time.Since(began)
	if _, own := res.CPU[st.name]; !own { // a stage of parts counts their CPU apart from its settling
		res.CPU[st.name] = Cores(before, r.readCPU(), took.Seconds())
	}
	res.PGActive[st.name] = active
	r.progress("%s done in %.1fs; CPU cores used: %s", st.name, took.Seconds(), largestFirst(res.CPU[st.name], "%.2f"))
	r.progress("%s: PostgreSQL backends by statement (average active):%s", st.name, describe(active))
	return nil
}

// quiet readies the stack for the stage or part name: with settle, it
// waits for the apply worker and vacuums (see settle); then it has the
// disk write back what the page cache holds dirty (see writeBack).
func (r *run) quiet(ctx context.Context, name string, settle bool) error {
	if settle {
		if err := r.settle(ctx); err != nil {
			return err
		}
	}
	dirty, wrote := writeBack()
	r.progress("%s: the disk wrote the %d MB the page cache held dirty in %.1fs", name, dirty>>20, wrote.Seconds())
	return nil
}

// writeBack has the kernel write every dirty page of the machine to disk
// (sync(2)) and says how many bytes were dirty and how long it took. The
// stack, its build and the bench share one disk here, and the kernel
// writes a file's dirty pages in one go once they are 30 s old
// (vm.dirty_expire_centisecs), while every commit waits for a WAL flush:
// the stack's build (240-270 MB dirty when the first stage starts) made
// windows 5 to 7 of the open loop, run alone, take 22-76 ms at p99, where
// the others took 6-13.
func writeBack() (dirty uint64, took time.Duration) {
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if mi, err := fs.Meminfo(); err == nil && mi.DirtyBytes != nil {
			dirty = *mi.DirtyBytes
		}
	}
	began := time.Now()
	syscall.Sync()
	return dirty, time.Since(began)
}
