package relay

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/onceflow/onceflow/pkg/lease"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/testwait"
)

const billingType = "billing.document_requested"

// TestPublishesEveryRowOnce sends 10,000 rows committed at once: each event
// key arrives, with its body and attributes, and every row is marked
// published once. A key is sent twice only when the relay left a send
// unconfirmed (a call that timed out after SQS took it, or a lease that
// lapsed with batches in flight, on a starved machine), so the extra
// messages are at most the unconfirmed rows the relay counted.
func TestPublishesEveryRowOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r, reg := f.newRelay(t, testSettings("a"))
	start(t, r)

	msgs := make([]outbox.Message, 10_000)
	for i := range msgs {
		msgs[i] = message(i, billingType)
	}
	f.insert(t, msgs...)

	got := f.receive(t, len(msgs))
	for _, m := range msgs {
		received := got[m.EventKey]
		if len(received) == 0 {
			t.Fatalf("event %s never received", m.EventKey)
		}
		attrs := received[0].MessageAttributes
		for name, want := range map[string]string{"type": billingType, "traceparent": m.Traceparent} {
			if v := aws.ToString(attrs[name].StringValue); v != want {
				t.Errorf("event %s attribute %s = %q, want %q", m.EventKey, name, v, want)
			}
		}
		if body, want := aws.ToString(received[0].Body), base64.StdEncoding.EncodeToString(m.Payload); body != want {
			t.Errorf("event %s body = %q, want %q (its payload in base64)", m.EventKey, body, want)
		}
	}
	if len(got) != len(msgs) {
		t.Fatalf("received %d event keys, want %d", len(got), len(msgs))
	}
	testwait.Until(t, waitTimeout, waitEvery, "every row marked published", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox WHERE published_at IS NULL`) == 0
	})
	unsure := sentUnconfirmed(t, reg)
	expectDelivered(t, copiesOf(got, msgs), unsure)
	// A mark whose answer was lost (one of the unconfirmed) may have
	// committed uncounted.
	if n := metric(t, reg, "onceflow_relay_published_total"); n > float64(len(msgs)) || n < float64(len(msgs)-unsure) {
		t.Errorf("published_total = %v, want %d (%d unconfirmed)", n, len(msgs), unsure)
	}
}

// TestParksUnroutedAndOversizeRows runs with SQS's default 1 MiB caps: a
// row over the message cap and a row without a route are parked at once
// with their reasons, while the others flow, including three 400 KiB rows
// that no single batch call can carry together.
func TestParksUnroutedAndOversizeRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r, reg := f.newRelay(t, testSettings("a"))
	start(t, r)

	pad := func(i, size int) outbox.Message {
		m := message(i, billingType)
		m.Payload = fmt.Appendf(nil, `{"pad":%q}`, bytes.Repeat([]byte("x"), size))
		return m
	}
	oversize := pad(5, 1<<20)
	unrouted := message(6, "unknown.thing")
	f.insert(t, message(0, billingType), pad(1, 400<<10), pad(2, 400<<10), pad(3, 400<<10), message(4, billingType), oversize, unrouted)

	got := f.receive(t, 5)
	if len(got) != 5 {
		t.Fatalf("received %d event keys, want the 5 routable ones: %v", len(got), keys(got))
	}
	testwait.Until(t, waitTimeout, waitEvery, "two rows parked and five published", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox WHERE parked_at IS NOT NULL`) == 2 &&
			f.count(t, `SELECT count(*) FROM ingest.outbox WHERE published_at IS NOT NULL`) == 5
	})
	// Every call fit SQS's caps: a send failed only by losing its answer (a
	// starved machine), never refused for its size.
	if failed, unsure := metric(t, reg, "onceflow_relay_failed_total"), sentUnconfirmed(t, reg); failed > float64(unsure) {
		t.Errorf("failed_total = %v with %d unconfirmed: SQS refused a call (too large?)", failed, unsure)
	}
	for key, want := range map[string]string{
		unrouted.EventKey: "no route for type unknown.thing",
		oversize.EventKey: "exceeds RELAY_MAX_MESSAGE_BYTES=1048576",
	} {
		var reason string
		err := f.pool.QueryRow(context.Background(),
			`SELECT parked_reason FROM ingest.outbox WHERE event_key = $1 AND published_at IS NULL`, key).Scan(&reason)
		if err != nil || !strings.Contains(reason, want) {
			t.Errorf("row %s parked_reason = %q (%v), want it to contain %q", key, reason, err, want)
		}
	}
	if n := metric(t, reg, "onceflow_relay_parked_total"); n != 2 {
		t.Errorf("parked_total = %v, want 2", n)
	}
}

func TestOneLeaderPublishes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A TTL no stall of a shared machine outlasts: the lease must not move.
	settings := func(holder string) Settings {
		s := testSettings(holder)
		s.LeaseTTL = 30 * time.Second
		return s
	}
	a, regA := f.newRelay(t, settings("a"))
	b, regB := f.newRelay(t, settings("b"))
	start(t, a)
	start(t, b)
	testwait.Until(t, waitTimeout, waitEvery, "a leader", func() bool {
		return metric(t, regA, "onceflow_relay_is_leader")+metric(t, regB, "onceflow_relay_is_leader") == 1
	})

	msgs := make([]outbox.Message, 50)
	for i := range msgs {
		msgs[i] = message(i, billingType)
		f.insert(t, msgs[i])
	}
	got := f.receive(t, len(msgs))
	expectDelivered(t, copiesOf(got, msgs), sentUnconfirmed(t, regA, regB))

	leader, standby, holder := regA, regB, "a"
	if metric(t, regB, "onceflow_relay_is_leader") == 1 {
		leader, standby, holder = regB, regA, "b"
	}
	if n := metric(t, standby, "onceflow_relay_published_total"); n != 0 {
		t.Errorf("the standby published %v rows", n)
	}
	testwait.Until(t, waitTimeout, waitEvery, "the leader counts every row", func() bool {
		return metric(t, leader, "onceflow_relay_published_total") == 50
	})
	if n := f.count(t, `SELECT count(*) FROM relay.leases WHERE holder = $1 AND name = $2`, holder, LeaseName(ingestOutbox, 0, 1)); n != 1 {
		t.Errorf("lease rows held by the leader %s = %d, want 1", holder, n)
	}
}

// TestDeposedLeaderCannotMarkPublished lets a leader claim rows, stall past
// its TTL while another relay takes the lease over, and then try to record
// its sends: the fence refuses, and no row changes.
func TestDeposedLeaderCannotMarkPublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	old, reg := f.newRelay(t, testSettings("old"))
	token, ok, err := old.shards[0].lease.Acquire(ctx)
	if err != nil || !ok {
		t.Fatalf("acquire: ok=%v err=%v", ok, err)
	}
	f.insert(t, message(0, billingType), message(1, billingType))
	rows, err := old.claim(ctx, old.shards[0], 0, nil)
	if err != nil || len(rows) != 2 {
		t.Fatalf("claim = %d rows, %v; want 2", len(rows), err)
	}

	// The old leader stalls past its TTL and a new one takes over.
	if _, err := f.pool.Exec(ctx, `UPDATE relay.leases SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	usurper := lease.New(f.pool, LeaseSchema, LeaseName(ingestOutbox, 0, 1), "new", testSettings("new").LeaseTTL)
	if next, ok, err := usurper.Acquire(ctx); err != nil || !ok || next != token+1 {
		t.Fatalf("usurper acquire = %d, %v, %v; want %d, true", next, ok, err, token+1)
	}

	if err := old.deliver(ctx, old.shards[0], token, rows); !errors.Is(err, lease.ErrDeposed) {
		t.Fatalf("deliver under the old token = %v, want lease.ErrDeposed", err)
	}
	if n := f.count(t, `SELECT count(*) FROM ingest.outbox WHERE published_at IS NULL AND attempts = 0`); n != 2 {
		t.Errorf("untouched rows = %d, want 2: the deposed leader changed rows", n)
	}
	if n := metric(t, reg, "onceflow_relay_published_total"); n != 0 {
		t.Errorf("published_total = %v after a fenced batch, want 0", n)
	}
	if n := sentUnconfirmed(t, reg); n != 2 {
		t.Errorf("unconfirmed_total = %d after a fenced batch, want 2: both rows reached SQS unrecorded", n)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestFailedSendsBackOffThenPark(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := testSettings("a")
	s.MaxAttempts = 3
	reg, m := newMetrics(t)
	missing := Outbox{Table: ingestOutbox, Routes: []Route{{Prefix: "billing.", Queue: f.queue + "-missing"}}}
	start(t, New(f.pool, f.sqs, m, zaptestLogger(t), missing, s))
	f.insert(t, message(0, billingType))

	testwait.Until(t, waitTimeout, waitEvery, "the row parked after 3 attempts", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox WHERE parked_at IS NOT NULL AND attempts = 3 AND parked_reason <> ''`) == 1
	})
	if n := metric(t, reg, "onceflow_relay_failed_total"); n != 3 {
		t.Errorf("failed_total = %v, want 3", n)
	}
	if n := metric(t, reg, "onceflow_relay_parked_total"); n != 1 {
		t.Errorf("parked_total = %v, want 1", n)
	}
}

// TestNotificationWakesTheLeader checks that a producer's NOTIFY wakes the
// leader: with an hour's poll and a ten-minute lease, nothing else would
// within the test.
func TestNotificationWakesTheLeader(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := testSettings("a")
	s.PollInterval, s.LeaseTTL = time.Hour, 10*time.Minute // neither polls nor renewals wake it during the test
	r, _ := f.newRelay(t, s)
	start(t, r)
	testwait.Until(t, waitTimeout, waitEvery, "the leader listening", func() bool {
		return f.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`) == 1
	})

	f.insert(t, message(0, billingType))
	// As a producer's outbox.Waker does once its transaction committed.
	if _, err := f.pool.Exec(context.Background(), "SELECT pg_notify($1, $2)", outbox.Channel, ingestOutbox.String()); err != nil {
		t.Fatal(err)
	}
	if got := f.receive(t, 1); len(got) != 1 {
		t.Fatalf("received %v, want the one event", keys(got))
	}
}
