package relay

import (
	"context"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// TestSQSOutage stops the SQS server under a running relay: rows back off
// and keep failing without being parked before their tenth failure, and
// once the server is back every row is delivered and marked published.
func TestSQSOutage(t *testing.T) {
	t.Parallel()
	server := sqstest.StartFauxqs(t)
	f := newFixtureOn(t, server.Client())
	s := testSettings("a")
	// Three failures take under a second; seven more would take over six,
	// far longer than restarting the server.
	s.Backoff = backoff.Policy{Base: 200 * time.Millisecond, Cap: 2 * time.Second}
	r, reg := f.newRelay(t, s)
	start(t, r)

	server.Stop()
	msgs := make([]outbox.Message, 30)
	for i := range msgs {
		msgs[i] = message(i, billingType)
	}
	f.insert(t, msgs...)
	testwait.Until(t, waitTimeout, waitEvery, "every row failed and backed off three times", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox
WHERE attempts >= 3 AND last_error <> '' AND next_attempt_at > created_at`) == len(msgs)
	})
	if n := f.count(t, `SELECT count(*) FROM ingest.outbox WHERE parked_at IS NOT NULL`); n != 0 {
		t.Fatalf("%d rows parked after fewer than %d failures", n, s.MaxAttempts)
	}
	if n := f.count(t, `SELECT count(*) FROM ingest.outbox WHERE published_at IS NOT NULL`); n != 0 {
		t.Fatalf("%d rows marked published while SQS was down", n)
	}

	server.Start() // empty: the queue comes back under the same URL
	if _, err := sqsclient.EnsureQueue(context.Background(), f.sqs, queueLabel(f.queue), 5); err != nil {
		t.Fatal(err)
	}
	got := f.receive(t, len(msgs))
	for _, m := range msgs {
		if len(got[m.EventKey]) == 0 {
			t.Errorf("event %s never arrived after SQS came back", m.EventKey)
		}
	}
	testwait.Until(t, waitTimeout, waitEvery, "every row published", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox WHERE published_at IS NOT NULL AND parked_at IS NULL`) == len(msgs)
	})
	if n := f.count(t, `SELECT max(attempts) FROM ingest.outbox`); n >= s.MaxAttempts {
		t.Errorf("a row reached %d attempts, want fewer than %d", n, s.MaxAttempts)
	}
	if n := metric(t, reg, "onceflow_relay_failed_total"); n < float64(3*len(msgs)) {
		t.Errorf("failed_total = %v, want at least %d", n, 3*len(msgs))
	}
}
