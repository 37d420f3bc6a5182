package relay

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/sqstest"
)

const benchRows = 10_000

// BenchmarkRelayVsRawSend measures the relay end to end — claim, send,
// mark published under the fence — on benchRows committed rows, and the
// same number of messages sent with SendMessageBatch straight from Go,
// without the database, to the same endpoint with the relay's chunking and
// calls in flight. It reports both rates and relay/raw, the share of the raw
// SQS rate the relay achieves. Run it once:
//
//	go test -run '^$' -bench RelayVsRawSend -benchtime 1x ./internal/relay/
func BenchmarkRelayVsRawSend(b *testing.B) {
	f := newFixture(b)
	_, rawQueue := sqstest.Queue(b, f.sqs, "relaybench", 5)
	var relayTook, rawTook time.Duration
	for i := 0; b.Loop(); i++ {
		relayTook += f.timeRelay(b, i)
		rawTook += timeRaw(b, f.sqs, rawQueue)
	}
	msgs := float64(benchRows * b.N)
	relayRate, rawRate := msgs/relayTook.Seconds(), msgs/rawTook.Seconds()
	b.ReportMetric(relayRate, "relay_msgs/s")
	b.ReportMetric(rawRate, "raw_msgs/s")
	b.ReportMetric(relayRate/rawRate, "relay/raw")
}

// timeRelay commits benchRows rows, then runs a relay until all of them are
// published and returns how long that took.
func (f *fixture) timeRelay(b *testing.B, round int) time.Duration {
	b.Helper()
	msgs := make([]outbox.Message, benchRows)
	for i := range msgs {
		msgs[i] = message(round*benchRows+i, billingType)
	}
	f.insert(b, msgs...)
	s := testSettings("bench")
	s.PollInterval = 5 * time.Millisecond // no notification for rows committed before it listens
	reg, m := newMetrics(b)
	r := New(f.pool, f.sqs, m, zaptestLogger(b), f.billingOutbox(), s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	for metric(b, reg, "onceflow_relay_published_total") < benchRows {
		time.Sleep(time.Millisecond)
	}
	took := time.Since(began)
	cancel()
	<-done
	return took
}

// timeRaw sends benchRows messages like the relay's to queue, ten per call
// and callsInFlight calls at a time, and returns how long that took.
func timeRaw(b *testing.B, c *sqs.Client, queue string) time.Duration {
	b.Helper()
	row := outbox.Row{EventKey: "payment:0:paid", EventType: billingType, Payload: []byte(`{"n":0}`), Traceparent: traceparent}
	began := time.Now()
	var g errgroup.Group
	g.SetLimit(callsInFlight)
	for first := 0; first < benchRows; first += entriesPerCall {
		g.Go(func() error {
			entries := make([]types.SendMessageBatchRequestEntry, entriesPerCall)
			for i := range entries {
				entries[i] = types.SendMessageBatchRequestEntry{
					Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(outbox.Body(row.Payload)), MessageAttributes: attributes(row),
				}
			}
			out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue), Entries: entries})
			if err == nil && len(out.Failed) > 0 {
				err = fmt.Errorf("%d entries failed", len(out.Failed))
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("raw send: %v", err)
	}
	return time.Since(began)
}

// BenchmarkShardedRelays measures how fast benchRows committed rows are
// published by one relay with one shard, and by three relays (each with its
// own pool, like three pods) sharing eight shards, from the start of the
// relays until the last row is published. It reports both rates and
// sharded/single. Run it once:
//
//	go test -run '^$' -bench ShardedRelays -benchtime 1x ./internal/relay/
func BenchmarkShardedRelays(b *testing.B) {
	f := newFixture(b)
	var single, sharded time.Duration
	for i := 0; b.Loop(); i++ {
		single += f.timeReplicas(b, 2*i, 1, 1)
		sharded += f.timeReplicas(b, 2*i+1, 3, 8)
	}
	msgs := float64(benchRows * b.N)
	singleRate, shardedRate := msgs/single.Seconds(), msgs/sharded.Seconds()
	b.ReportMetric(singleRate, "single_msgs/s")
	b.ReportMetric(shardedRate, "sharded_msgs/s")
	b.ReportMetric(shardedRate/singleRate, "sharded/single")
}

// timeReplicas commits benchRows rows, then runs replicas relays over
// shards shards until all of them are published, and returns how long that
// took.
func (f *fixture) timeReplicas(b *testing.B, round, replicas, shards int) time.Duration {
	b.Helper()
	msgs := make([]outbox.Message, benchRows)
	for i := range msgs {
		msgs[i] = message(round*benchRows+i, billingType)
	}
	f.insert(b, msgs...)
	began := time.Now()
	reps := make([]*replica, replicas)
	for i := range reps {
		s := testSettings(fmt.Sprintf("bench%d-%d", round, i))
		s.Shards = shards
		reps[i] = f.startReplica(b, s)
	}
	published := func() (n float64) {
		for _, r := range reps {
			n += metric(b, r.reg, "onceflow_relay_published_total")
		}
		return n
	}
	for published() < benchRows {
		time.Sleep(time.Millisecond)
	}
	took := time.Since(began)
	for _, r := range reps {
		r.stop()
	}
	return took
}
