package app

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/sqstest"
)

// TestServe runs the real relay against a fresh database and queue and
// drives it from the outside: a committed outbox row arrives on the queue
// and the operational endpoints answer.
func TestServe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	for _, schema := range []string{"ingest", Schema} {
		if err := db.Migrate(ctx, dsn, schema); err != nil {
			t.Fatal(err)
		}
	}
	client := sqstest.Client(t)
	queueName, queueURL := sqstest.Queue(t, client, "relaytest", 5)

	cfg := testConfig(t, dsn, "ingest.outbox=billing.>"+queueName)
	addr := startServe(t, cfg)

	insertRow(t, dsn, "payment:1:paid")
	if key := receiveOne(t, client, queueURL); key != "payment:1:paid" {
		t.Fatalf("received event key %q, want payment:1:paid", key)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := get(t, addr, path); code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, code)
		}
	}
	for _, want := range []string{
		`onceflow_relay_published_total{outbox="ingest.outbox",queue="` + queueName + `"} 1`,
		`onceflow_relay_is_leader{outbox="ingest.outbox"} 1`,
	} {
		// The row is counted once its mark commits, just after the send.
		deadline := time.Now().Add(10 * time.Second)
		for _, metrics := get(t, addr, "/metrics"); !strings.Contains(metrics, want); _, metrics = get(t, addr, "/metrics") {
			if time.Now().After(deadline) {
				t.Fatalf("/metrics lacks %s:\n%s", want, metrics)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// testConfig is the default configuration pointed at dsn and the emulator,
// with routes and fast timings for a test.
func testConfig(t *testing.T, dsn, routes string) Config {
	t.Helper()
	loaded, err := config.Load[Config]()
	if err != nil {
		t.Fatal(err)
	}
	cfg := loaded.Value
	cfg.DatabaseURL, cfg.HTTPAddr, cfg.Routes = dsn, "127.0.0.1:0", routes
	cfg.PollInterval, cfg.LeaseTTL, cfg.Holder = 200*time.Millisecond, 3*time.Second, "component-test"
	return cfg
}

// startServe runs Serve until the test ends and returns its HTTP address.
func startServe(t *testing.T, cfg Config) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), cfg, func(a string) { addrs <- a })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v after shutdown, want nil", err)
		}
	})
	select {
	case a := <-addrs:
		return a
	case err := <-done:
		t.Fatalf("Serve failed to start: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not start listening")
	}
	return ""
}

func insertRow(t *testing.T, dsn, key string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := outbox.Insert(ctx, tx, outbox.Table{Schema: "ingest", Name: "outbox"}, outbox.Message{
			EventKey: key, EventType: "billing.document_requested", Payload: []byte(`{}`),
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// receiveOne long-polls the queue until a message arrives, deletes it and
// returns its event key.
func receiveOne(t *testing.T, c *sqs.Client, url string) string {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 1, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			return aws.ToString(m.MessageAttributes["event_key"].StringValue)
		}
	}
	t.Fatal("no message arrived before the deadline")
	return ""
}

func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
