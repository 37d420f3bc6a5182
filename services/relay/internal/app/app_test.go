package app

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/api/openapi/openapitest"
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
// with routes and fast timings for a test; of the process environment it
// reads only where the SQS emulator is.
func testConfig(t *testing.T, dsn, routes string) Config {
	t.Helper()
	env := map[string]string{
		"DATABASE_URL": dsn, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "RELAY_ROUTES": routes,
		"RELAY_POLL_INTERVAL": "200ms", "RELAY_LEASE_TTL": "3s", "RELAY_HOLDER": "component-test",
		"AWS_ENDPOINT_URL_SQS": os.Getenv("AWS_ENDPOINT_URL_SQS"), "AWS_REGION": os.Getenv("AWS_REGION"),
	}
	loaded, err := config.LoadFrom[Config](func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return loaded.Value
}

// startServe builds the relay with New, runs it until the test ends and
// returns its admin address (the relay's public port serves only the
// probes, which the admin port serves too).
func startServe(t *testing.T, cfg Config) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, cfg, zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)))
	if err != nil {
		cancel()
		t.Fatalf("New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v after shutdown, want nil", err)
		}
	})
	openapitest.Routes(t, "relay", a.Routes())
	return a.AdminAddr()
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
	resp, err := openapitest.Client(t, "relay", nil).Get("http://" + addr + path)
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
