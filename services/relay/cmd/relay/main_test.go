package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// waitTimeout and waitEvery bound this package's testwait.Until.
const waitTimeout, waitEvery = 60 * time.Second, 10 * time.Millisecond

const (
	backlog   = 5000
	batchSize = 20 // small batches keep the leader busy long enough to be killed mid-backlog
	leaseTTL  = 2 * time.Second
)

// TestStandbyTakesOverFromKilledLeader runs two relay processes, kills the
// leader with SIGKILL in the middle of a backlog, and checks that the
// standby takes the lease over under the next fencing token and publishes
// the whole backlog: every event key arrives, duplicates come only from the
// killed leader's batches in flight, and every row ends published.
func TestStandbyTakesOverFromKilledLeader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "relay")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dsn := pgtest.NewDatabase(t)
	for _, schema := range []string{"ingest", "relay"} {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	client := sqstest.Client(t)
	_, queue := sqstest.Queue(t, client, "relaykill", 5)

	a := startRelay(t, bin, dsn, queue, "a")
	holder, token := waitForLeader(t, pool, "a")
	startRelay(t, bin, dsn, queue, "b")
	insertBacklog(t, pool)

	testwait.Until(t, waitTimeout, waitEvery, "the leader publishing", func() bool { return countRows(t, pool, "published_at IS NOT NULL") >= 2*batchSize })
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	left := countRows(t, pool, "published_at IS NULL")
	if left == 0 {
		t.Fatal("the leader finished the backlog before it was killed; raise the backlog")
	}
	newHolder, newToken := waitForLeader(t, pool, "b")
	t.Logf("%s (token %d) killed with %d rows left; %s took over with token %d after %v (lease TTL %v)",
		holder, token, left, newHolder, newToken, time.Since(killed).Round(10*time.Millisecond), leaseTTL)
	if newToken != token+1 {
		t.Errorf("new token = %d, want %d: one hand-over", newToken, token+1)
	}

	got := receiveAll(t, client, queue)
	dups := 0
	for i := range backlog {
		n := got[fmt.Sprintf("payment:%d:paid", i)]
		if n == 0 {
			t.Fatalf("event payment:%d:paid never arrived", i)
		}
		dups += n - 1
	}
	t.Logf("%d messages for %d rows: %d duplicates", backlog+dups, backlog, dups)
	if maxDups := 4 * batchSize; dups > maxDups {
		t.Errorf("%d duplicate messages, want at most the killed leader's four batches in flight, %d", dups, maxDups)
	}
	testwait.Until(t, waitTimeout, waitEvery, "every row published", func() bool { return countRows(t, pool, "published_at IS NOT NULL") == backlog })
	if n := countRows(t, pool, "parked_at IS NOT NULL"); n != 0 {
		t.Errorf("%d rows parked", n)
	}
}

// startRelay runs the relay binary as holder until the test ends; its
// output goes to the test log if the test fails.
func startRelay(t *testing.T, bin, dsn, queue, holder string) *exec.Cmd {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), holder+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dsn, "HTTP_ADDR=127.0.0.1:0", "ADMIN_ADDR=127.0.0.1:0", "RELAY_HOLDER="+holder,
		"RELAY_ROUTES=ingest.outbox=billing.>"+queue, "RELAY_LEASE_TTL="+leaseTTL.String(),
		"RELAY_POLL_INTERVAL=100ms", fmt.Sprintf("RELAY_BATCH_SIZE=%d", batchSize))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("relay %s output:\n%s", holder, out)
		}
	})
	return cmd
}

// waitForLeader waits until holder holds the outbox's lease and returns it
// with its token.
func waitForLeader(t *testing.T, pool *pgxpool.Pool, holder string) (string, int64) {
	t.Helper()
	var got string
	var token int64
	testwait.Until(t, waitTimeout, waitEvery, holder+" leading", func() bool {
		err := pool.QueryRow(context.Background(),
			`SELECT holder, token FROM relay.leases WHERE name = 'outbox:ingest.outbox:0' AND expires_at > now()`).Scan(&got, &token)
		return err == nil && got == holder
	})
	return got, token
}

func insertBacklog(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for i := range backlog {
			m := outbox.Message{EventKey: fmt.Sprintf("payment:%d:paid", i), EventType: "billing.document_requested", Payload: fmt.Appendf(nil, `{"n":%d}`, i)}
			if _, err := outbox.Insert(ctx, tx, outbox.Table{Schema: "ingest", Name: "outbox"}, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func countRows(t *testing.T, pool *pgxpool.Pool, where string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM ingest.outbox WHERE `+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// receiveAll drains the queue, deleting what it receives, until every row
// is published and a receive comes back empty; it counts messages per event
// key, once per SQS message id (a message handed out again because its
// delete came late is the same copy).
func receiveAll(t *testing.T, c *sqs.Client, queue string) map[string]int {
	t.Helper()
	ctx := context.Background()
	got, seen := map[string]int{}, map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{outbox.AttrEventKey},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 && len(got) == backlog {
			return got
		}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				got[aws.ToString(m.MessageAttributes[outbox.AttrEventKey].StringValue)]++
			}
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if len(entries) > 0 {
			if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queue), Entries: entries}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Fatalf("received %d of %d event keys before the deadline", len(got), backlog)
	return nil
}
