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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// run is one benchmark run in progress.
type run struct {
	cfg   Config
	out   io.Writer
	began time.Time
	dir   string // binaries, logs and the sources file
	tag   string // makes event ids, order ids and queue names unique to the run
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

// setUp builds and starts the stack on a fresh database, with ingest
// serving the bench source, and opens the harness's own clients.
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
	r.progress("building and starting the stack (logs in %s; extra settings %v)", r.dir, r.cfg.Env)
	env := append([]string{"INGEST_WEBHOOK_SOURCES_FILE=" + sources}, r.cfg.Env...)
	r.s, err = stack.StartWith(ctx, r.dir, stack.Options{Env: env})
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
	if r.sqs, err = sqsclient.NewClient(ctx, region(), os.Getenv("AWS_ENDPOINT_URL_SQS")); err != nil {
		return err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 2048, 2048
	r.client = &http.Client{Transport: transport, Timeout: 30 * time.Second}
	return nil
}

// OpenPool connects conns connections to the stack's database and keeps
// them open.
func OpenPool(ctx context.Context, dsn string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = int32(conns), int32(conns)
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

// tearDown stops the stack, deletes the run's queues (the emulator is
// shared) and, after a good run, the logs.
func (r *run) tearDown(ok bool) {
	for _, p := range []*pgxpool.Pool{r.db, r.ceiling} {
		if p != nil {
			p.Close()
		}
	}
	if r.s != nil {
		r.s.Stop()
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

// stage is one measurement: it fills its figures into the results. A
// stage that settles first waits for ingest's apply worker to catch up with
// the receipts of the stage before, so it does not pay for them.
type stage struct {
	name   string
	settle bool
	run    func(context.Context, *Results) error
}

// measure runs the stages in an order that keeps them apart: the pipeline
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
		{"steady", false, r.steady}, {"pipeline", false, r.pipeline}, {"relay", false, r.relay}, {"sqs_raw", false, r.rawSQS},
		{"ingest_open", true, r.ingestOpen}, {"ingest_closed", true, r.ingestClosed}, {"pg_ceiling", true, r.pgCeiling},
	}
	for _, st := range stages {
		if err := r.runStage(ctx, st, &res); err != nil {
			return res, fmt.Errorf("%s: %w", st.name, err)
		}
	}
	res.IngestRatio = res.IngestRPS / res.PGCeilingTPS
	res.RelayRatio = res.RelayMPS / res.SQSRawMPS
	return res, nil
}

// runStage runs one stage, reading the CPU each process used and sampling
// what PostgreSQL ran meanwhile.
func (r *run) runStage(ctx context.Context, st stage, res *Results) error {
	if st.settle {
		if err := r.settle(ctx); err != nil {
			return err
		}
	}
	before, began := ReadCPU(r.s), time.Now()
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
	res.CPU[st.name], res.PGActive[st.name] = Cores(before, ReadCPU(r.s), took.Seconds()), active
	r.progress("%s done in %.1fs; CPU cores used: %s", st.name, took.Seconds(), coresLine(res.CPU[st.name]))
	r.progress("%s: PostgreSQL backends by statement (average active):%s", st.name, describe(active))
	return nil
}
