package relay

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/sqstest"
)

var ingestOutbox = outbox.Table{Schema: "ingest", Name: "outbox"}

// waitTimeout and waitEvery bound this package's testwait.Until.
const waitTimeout, waitEvery = 20 * time.Second, 50 * time.Millisecond

// fixture is a fresh database with the ingest and relay schemas and a fresh
// queue.
type fixture struct {
	dsn   string
	pool  *pgxpool.Pool
	sqs   *sqs.Client
	queue string // URL
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureOn(t, sqstest.Client(t))
}

// newFixtureOn is newFixture with its queue on the server of c.
func newFixtureOn(t testing.TB, c *sqs.Client) *fixture {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	for _, schema := range []string{"ingest", "relay"} {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := pg.Open(ctx, dsn, PoolOptions...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	_, url := sqstest.Queue(t, c, "relaytest", 5)
	return &fixture{dsn: dsn, pool: pool, sqs: c, queue: url}
}

func testSettings(holder string) Settings {
	return Settings{
		Holder:          holder,
		BatchSize:       100,
		MaxAttempts:     10,
		Backoff:         backoff.Policy{Base: 10 * time.Millisecond, Cap: 100 * time.Millisecond},
		PollInterval:    200 * time.Millisecond,
		LeaseTTL:        3 * time.Second,
		MaxMessageBytes: 1 << 20,
		MaxBatchBytes:   1 << 20,
		Retention:       time.Hour,
		PruneInterval:   time.Minute,
		PruneBatch:      1000,
		StatsInterval:   100 * time.Millisecond,
	}
}

// billingOutbox routes billing events of ingest.outbox to the fixture's queue.
func (f *fixture) billingOutbox() Outbox {
	return Outbox{Table: ingestOutbox, Routes: []Route{{Prefix: "billing.", Queue: f.queue}}}
}

// newRelay builds a relay with its own metrics registry.
func (f *fixture) newRelay(t testing.TB, s Settings) (*Relay, *prometheus.Registry) {
	t.Helper()
	reg, m := newMetrics(t)
	return New(f.pool, f.sqs, m, zaptestLogger(t).Named(s.Holder), f.billingOutbox(), s), reg
}

func newMetrics(t testing.TB) (*prometheus.Registry, *Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return reg, m
}

func zaptestLogger(t testing.TB) *zap.Logger {
	return zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
}

// start runs r until the test ends.
func start(t testing.TB, r *Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// traceparent is a W3C trace context every test message carries.
const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func message(i int, eventType string) outbox.Message {
	return outbox.Message{
		EventKey:    fmt.Sprintf("payment:%d:paid", i),
		EventType:   eventType,
		Payload:     fmt.Appendf(nil, `{"n":%d}`, i),
		Traceparent: traceparent,
	}
}

// insert commits msgs to ingest.outbox in one transaction.
func (f *fixture) insert(t testing.TB, msgs ...outbox.Message) {
	t.Helper()
	ctx := context.Background()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, m := range msgs {
		if _, err := outbox.Insert(ctx, tx, ingestOutbox, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// receive takes messages off the fixture's queue with a few concurrent
// receivers, deleting them, until want distinct event keys have arrived and
// the queue is then empty. It returns the messages by event key, each a list
// so duplicates show: the copies the relays sent, one per SQS message id (a
// message SQS hands out again because its delete came late counts once).
func (f *fixture) receive(t testing.TB, want int) map[string][]types.Message {
	t.Helper()
	const receivers = 4
	var mu sync.Mutex
	got, seen := map[string][]types.Message{}, map[string]bool{}
	deadline := time.Now().Add(30*time.Second + time.Duration(want)*5*time.Millisecond)
	var g errgroup.Group
	for range receivers {
		g.Go(func() error {
			for time.Now().Before(deadline) {
				msgs, err := f.receiveOnce()
				if err != nil {
					return err
				}
				mu.Lock()
				for _, m := range msgs {
					if id := aws.ToString(m.MessageId); !seen[id] {
						seen[id] = true
						key := aws.ToString(m.MessageAttributes["event_key"].StringValue)
						got[key] = append(got[key], m)
					}
				}
				done := len(got) >= want && len(msgs) == 0
				mu.Unlock()
				if done {
					return nil
				}
			}
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("received %d of %d event keys before the deadline", len(got), want)
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return got
}

// receiveOnce long-polls the queue for up to ten messages and deletes them.
// Messages stay hidden 5 s, not the queue's 30 s: when a response is lost on
// the way (the SDK then retries the receive), its messages come back well
// within the caller's deadline.
func (f *fixture) receiveOnce() ([]types.Message, error) {
	ctx := context.Background()
	out, err := f.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(f.queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 5,
		MessageAttributeNames: []string{"All"},
	})
	if err != nil || len(out.Messages) == 0 {
		return nil, err
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
	for i, m := range out.Messages {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
	}
	if _, err := f.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(f.queue), Entries: entries}); err != nil {
		return nil, fmt.Errorf("delete: %w", err)
	}
	return out.Messages, nil
}

// sentUnconfirmed sums onceflow_relay_unconfirmed_total over regs: the rows
// those relays sent without a recorded outcome, the only ones they may send
// twice. It is 0 unless a call outlived its deadline or a lease lapsed, as
// on a starved machine.
func sentUnconfirmed(t testing.TB, regs ...*prometheus.Registry) int {
	t.Helper()
	var n float64
	for _, reg := range regs {
		n += metric(t, reg, "onceflow_relay_unconfirmed_total")
	}
	return int(n)
}

// copiesOf counts the copies of each of msgs in got (receive's answer).
func copiesOf(got map[string][]types.Message, msgs []outbox.Message) map[string]int {
	counts := make(map[string]int, len(msgs))
	for _, m := range msgs {
		counts[m.EventKey] = len(got[m.EventKey])
	}
	return counts
}

// expectDelivered fails unless every event key of counts arrived and the
// copies beyond the first number at most extra; it reports and returns the
// duplicates.
func expectDelivered(t testing.TB, counts map[string]int, extra int) int {
	t.Helper()
	dup := 0
	for key, n := range counts {
		if n < 1 {
			t.Errorf("event %s never arrived", key)
		}
		if n > 1 && extra == 0 {
			t.Errorf("event %s received %d times, want 1: no send was left unconfirmed", key, n)
		}
		dup += max(n-1, 0)
	}
	if dup > extra {
		t.Errorf("%d duplicate messages, want at most %d", dup, extra)
	}
	t.Logf("%d duplicate messages (at most %d allowed)", dup, extra)
	return dup
}

// count runs a count(*) query.
func (f *fixture) count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// metric sums every series of the named metric in reg.
func metric(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}
