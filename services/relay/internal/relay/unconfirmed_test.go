package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/onceflow/onceflow/pkg/outbox"
)

// answerLost is a Sender whose first calls reach SQS but lose their
// answer, as when the client times out after the server did the work.
type answerLost struct {
	Sender
	mu   sync.Mutex
	left int // calls still to lose
}

func (a *answerLost) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := a.Sender.SendMessageBatch(ctx, in, opts...)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil && a.left > 0 {
		a.left--
		return nil, fmt.Errorf("operation error SQS: SendMessageBatch: %w", context.DeadlineExceeded)
	}
	return out, err
}

// TestLostAnswersAreCountedAndSentAgain loses the answers of two calls that
// SQS did store: their rows are sent again, so each arrives twice, and
// onceflow_relay_unconfirmed_total counts them; every other row arrives once.
func TestLostAnswersAreCountedAndSentAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := testSettings("lossy")
	s.BatchSize = entriesPerCall // one call a batch
	reg, m := newMetrics(t)
	const lost, rows = 2, 45
	r := New(f.pool, &answerLost{Sender: f.sqs, left: lost}, m, zaptestLogger(t), f.billingOutbox(), s)
	start(t, r)
	msgs := make([]outbox.Message, rows)
	for i := range msgs {
		msgs[i] = message(i, billingType)
	}
	f.insert(t, msgs...)
	counts := f.receiveAll(t, rows)

	unsure := sentUnconfirmed(t, reg)
	if unsure < lost*entriesPerCall {
		t.Errorf("unconfirmed_total = %d, want at least the %d rows of the lost calls", unsure, lost*entriesPerCall)
	}
	// Beyond the lost calls, only a call that outlived its deadline on a
	// starved machine adds unconfirmed rows, and those may arrive twice.
	if dup := expectDelivered(t, counts, unsure); dup < lost*entriesPerCall {
		t.Errorf("%d duplicate messages, want at least the %d rows of the lost calls", dup, lost*entriesPerCall)
	}
}

func TestMayHaveSent(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("operation error SQS: SendMessageBatch, %w", err) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"refused whole: client fault", wrap(&smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue", Fault: smithy.FaultClient}), false},
		{"no connection made", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), false},
		{"server fault", wrap(&smithy.GenericAPIError{Code: "InternalError", Fault: smithy.FaultServer}), true},
		{"timed out waiting for the answer", wrap(context.DeadlineExceeded), true},
		{"connection reset after the request", wrap(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		{"unknown", errors.New("something else"), true},
	}
	for _, tt := range tests {
		if got := mayHaveSent(tt.err); got != tt.want {
			t.Errorf("%s: mayHaveSent = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestUnconfirmedCountsWhatIsSentAgain(t *testing.T) {
	t.Parallel()
	published := []outcome{{}, {}, {}}
	failures := []failure{{unsure: true}, {unsure: true, park: true}, {}, {park: true}}
	refused := fmt.Errorf("record batch: %w", context.DeadlineExceeded)
	tests := []struct {
		name   string
		recErr error
		want   int
	}{
		{"recorded: the unsure row retried (the parked one is not sent again)", nil, 1},
		{"not recorded: every unsure row and every published one go again", refused, 2 + len(published)},
	}
	for _, tt := range tests {
		if got := unconfirmed(published, failures, tt.recErr); got != tt.want {
			t.Errorf("%s: unconfirmed = %d, want %d", tt.name, got, tt.want)
		}
	}
}
