package consumer_test

import (
	"context"
	"fmt"
	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/testwait"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/pkg/tracing"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// queue is a fresh SQS queue with a dead-letter queue after maxReceive.
type queue struct {
	c   *sqs.Client
	url string
	dlq string
}

func newQueue(tb testing.TB, maxReceive int) queue {
	tb.Helper()
	c := sqstest.Client(tb)
	name, url := sqstest.Queue(tb, c, "invoicer-test", maxReceive)
	dlq, err := sqsclient.QueueURL(context.Background(), c, name+"-dlq")
	if err != nil {
		tb.Fatal(err)
	}
	return queue{c: c, url: url, dlq: dlq}
}

func (q queue) send(tb testing.TB, bodies ...string) {
	tb.Helper()
	for _, b := range bodies {
		if _, err := q.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(b)}); err != nil {
			tb.Fatal(err)
		}
	}
}

// left counts the messages still in queue url, visible or not.
func (q queue) left(tb testing.TB, url string) int {
	tb.Helper()
	out, err := q.c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// run runs receivers of q with h until the test ends.
func run(tb testing.TB, q queue, h consumer.BatchHandler, reg prometheus.Registerer, visibility time.Duration, receivers int) {
	tb.Helper()
	counter := consumer.NewCounter(reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, receivers)
	for range receivers {
		r := consumer.NewReceiver(q.c, q.url, "test", h, zaptest.NewLogger(tb), counter, consumer.Options{Wait: time.Second, Visibility: visibility})
		go func() { _ = r.Run(ctx); done <- struct{}{} }()
	}
	tb.Cleanup(func() {
		cancel()
		for range receivers {
			<-done
		}
	})
}

func body(tb testing.TB, ev *eventsv1.BillingEvent) string {
	tb.Helper()
	b, err := eventsv1.Encode(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func documents(tb testing.TB, env *invoicertest.Env) int {
	tb.Helper()
	var n int
	if err := env.Pool.QueryRow(context.Background(), "SELECT count(*) FROM invoicer.fiscal_documents").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestRedeliveredBillingEventAddsNoRow(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	q := newQueue(t, 5)
	reg := prometheus.NewRegistry()
	ev := body(t, invoicertest.Payment("pay-redelivered", 100_00, false))
	q.send(t, ev, ev, ev)
	run(t, q, consumer.NewBilling(env.Store, zaptest.NewLogger(t), nil).Handle, reg, 30*time.Second, 2)

	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "three messages handled", func() bool {
		return invoicertest.Metric(t, reg, "onceflow_invoicer_messages_total", nil) == 3
	})
	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "the queue to be empty", func() bool { return q.left(t, q.url) == 0 })
	if n := documents(t, env); n != 1 {
		t.Fatalf("%d documents recorded from one event delivered three times, want 1", n)
	}
	if got := invoicertest.Metric(t, reg, "onceflow_invoicer_messages_total", map[string]string{"outcome": "duplicate"}); got != 2 {
		t.Fatalf("%v duplicates counted, want 2", got)
	}
}

func TestPoisonMessageIsCountedAndLeftForTheDLQ(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	q := newQueue(t, 2)
	reg := prometheus.NewRegistry()
	noKind := invoicertest.Payment("pay-no-kind", 100_00, false)
	noKind.Kind = eventsv1.DocumentKind_DOCUMENT_KIND_UNSPECIFIED
	q.send(t, "not json", body(t, noKind))
	run(t, q, consumer.NewBilling(env.Store, zaptest.NewLogger(t), nil).Handle, reg, time.Second, 1)

	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "both messages in the dead-letter queue", func() bool { return q.left(t, q.dlq) == 2 })
	if got := invoicertest.Metric(t, reg, "onceflow_invoicer_messages_total", map[string]string{"outcome": "poison"}); got < 4 {
		t.Fatalf("%v poison receipts counted, want each message counted on both receives", got)
	}
	if n := documents(t, env); n != 0 {
		t.Fatalf("%d documents recorded from poison, want 0", n)
	}
}

func TestBillingBatchRecordsEachEventOnce(t *testing.T) {
	t.Parallel()
	bad := invoicertest.Payment("pay-nul", 100_00, false)
	bad.Lines[0].Description = "\x00" // valid in the event, refused by jsonb
	for _, tc := range []struct {
		name   string
		events []any // *eventsv1.BillingEvent, or a raw body
		want   []string
		refs   []string // source refs recorded by the batch
		txs    int      // transactions that recorded them
	}{
		{name: "a redelivered and a poison event among new ones",
			events: []any{invoicertest.Payment("pay-a", 100_00, false), invoicertest.Payment("pay-b", 200_00, true),
				invoicertest.Payment("pay-earlier", 100_00, false), "not json", invoicertest.Payment("pay-a", 100_00, false),
				invoicertest.Refund("ref-a", "pay-a", 50_00)},
			want: []string{"recorded", "recorded", "duplicate", "poison", "duplicate", "recorded"},
			refs: []string{"pay-a", "pay-b", "ref-a"}, txs: 1},
		{name: "a row the database refuses holds back no other",
			events: []any{invoicertest.Payment("pay-c", 100_00, false), bad, invoicertest.Payment("pay-d", 100_00, false)},
			want:   []string{"recorded", "error", "recorded"},
			refs:   []string{"pay-c", "pay-d"}, txs: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := invoicertest.New(t)
			env.Record(t, invoicertest.Payment("pay-earlier", 100_00, false)) // an earlier batch's
			var wakes int
			billing := consumer.NewBilling(env.Store, zaptest.NewLogger(t), func() { wakes++ })
			msgs := messages(t, tc.events)

			outcomes(t, billing.Handle(context.Background(), msgs), tc.want)
			wantRefs := append(slices.Clone(tc.refs), "pay-earlier")
			slices.Sort(wantRefs)
			if got := sources(t, env, msgs); !slices.Equal(got, wantRefs) {
				t.Fatalf("documents %v, want %v", got, wantRefs)
			}
			if n := transactions(t, env, tc.refs); n != tc.txs {
				t.Fatalf("the batch's documents were recorded by %d transactions, want %d", n, tc.txs)
			}
			if wakes != 1 {
				t.Fatalf("the emitter was woken %d times, want once for the batch", wakes)
			}
			again := slices.Clone(tc.want)
			for i := range again {
				if again[i] == "recorded" {
					again[i] = "duplicate"
				}
			}
			outcomes(t, billing.Handle(context.Background(), msgs), again)
			if n := documents(t, env); n != len(tc.refs)+1 || wakes != 1 {
				t.Fatalf("after the batch was redelivered: %d documents, %d wakes; want %d and still 1", n, wakes, len(tc.refs)+1)
			}
		})
	}
}

func TestReferenceCollisionTakesTheNextReference(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	// Another source's document holds the reference pay-coll would take.
	held := fiscal.Reference("payment", "pay-coll", fiscal.KindInvoice)
	holder := env.Record(t, invoicertest.Payment("pay-holder", 100_00, false))
	if _, err := env.Pool.Exec(ctx, "UPDATE invoicer.fiscal_documents SET reference = $1 WHERE id = $2", held, holder.ID); err != nil {
		t.Fatal(err)
	}
	billing := consumer.NewBilling(env.Store, zaptest.NewLogger(t), nil)
	msgs := messages(t, []any{invoicertest.Payment("pay-coll", 100_00, false), invoicertest.Payment("pay-coll", 100_00, false)})

	outcomes(t, billing.Handle(ctx, msgs), []string{"recorded", "duplicate"})
	var ref string
	if err := env.Pool.QueryRow(ctx, "SELECT reference FROM invoicer.fiscal_documents WHERE source_ref = 'pay-coll'").Scan(&ref); err != nil {
		t.Fatalf("pay-coll's document: %v", err)
	}
	if ref == held || !fiscal.ValidReference(ref) {
		t.Fatalf("pay-coll took reference %q, want a valid one other than the held %s", ref, held)
	}
	outcomes(t, billing.Handle(ctx, msgs[:1]), []string{"duplicate"})
	if n := documents(t, env); n != 2 {
		t.Fatalf("%d documents after a redelivery, want 2", n)
	}
}

// messages makes a batch of events, each message with a traceparent of its
// own.
func messages(tb testing.TB, events []any) []consumer.Message {
	tb.Helper()
	msgs := make([]consumer.Message, len(events))
	for i, ev := range events {
		msgs[i].Ctx = tracing.WithTraceparent(context.Background(), fmt.Sprintf("00-%032x-%016x-01", i+1, i+1))
		msgs[i].Body, _ = ev.(string)
		if ev, ok := ev.(*eventsv1.BillingEvent); ok {
			msgs[i].Body = body(tb, ev)
		}
	}
	return msgs
}

// outcomes checks a batch's results: the outcomes wanted, and an error
// exactly for the messages left in the queue.
func outcomes(tb testing.TB, res []consumer.Result, want []string) {
	tb.Helper()
	if len(res) != len(want) {
		tb.Fatalf("%d results for %d messages", len(res), len(want))
	}
	for i, r := range res {
		left := want[i] == "poison" || want[i] == "error"
		if r.Outcome != want[i] || (r.Err != nil) != left {
			tb.Errorf("message %d: %s (%v), want %s with an error=%v", i, r.Outcome, r.Err, want[i], left)
		}
	}
}

// sources lists the recorded documents' source refs, sorted, checking that
// each carries the traceparent of a message that asked for it.
func sources(tb testing.TB, env *invoicertest.Env, msgs []consumer.Message) []string {
	tb.Helper()
	parents := map[string]bool{}
	for _, m := range msgs {
		parents[tracing.Traceparent(m.Ctx)] = true
	}
	rows, err := env.Pool.Query(context.Background(), "SELECT source_ref, traceparent FROM invoicer.fiscal_documents ORDER BY source_ref")
	if err != nil {
		tb.Fatal(err)
	}
	var refs []string
	for rows.Next() {
		var ref, parent string
		if err := rows.Scan(&ref, &parent); err != nil {
			tb.Fatal(err)
		}
		if ref != "pay-earlier" && !parents[parent] {
			tb.Errorf("document %s recorded with traceparent %q, no message's", ref, parent)
		}
		refs = append(refs, ref)
	}
	return refs
}

// transactions counts the transactions that inserted the documents of refs.
func transactions(tb testing.TB, env *invoicertest.Env, refs []string) int {
	tb.Helper()
	var n int
	if err := env.Pool.QueryRow(context.Background(), "SELECT count(DISTINCT xmin::text) FROM invoicer.fiscal_documents WHERE source_ref = ANY($1)", refs).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestSlowBatchStaysHidden(t *testing.T) {
	t.Parallel()
	q := newQueue(t, 5)
	var calls atomic.Int32
	slow := func(ctx context.Context, _ string) (string, error) {
		calls.Add(1)
		time.Sleep(3 * time.Second) // three visibility periods
		return "handled", nil
	}
	q.send(t, "slow")
	run(t, q, consumer.Each(slow), prometheus.NewRegistry(), time.Second, 3)

	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "the message to be handled and deleted", func() bool { return calls.Load() > 0 && q.left(t, q.url) == 0 })
	if n := calls.Load(); n != 1 {
		t.Fatalf("handled %d times, want once: the visibility was not extended", n)
	}
}

func TestProviderEventsMoveDocumentsForwardOnly(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	q := newQueue(t, 5)
	reg := prometheus.NewRegistry()
	pending := env.Record(t, invoicertest.Payment("pay-event", 100_00, false))
	notSent := env.Record(t, invoicertest.Payment("pay-event-2", 100_00, false))
	env.Hold(t, pending, fiscal.StatusPendingDGI, "") // the sandbox authorized it meanwhile
	if _, err := env.Pool.Exec(context.Background(), `UPDATE invoicer.fiscal_documents SET due_at = now() + interval '1 hour' WHERE id = $1`, notSent.ID); err != nil {
		t.Fatal(err)
	}
	event := func(ref, status string) string {
		b, err := eventsv1.Encode(&eventsv1.ProviderEvent{EventId: "evt_" + ref + status, Provider: "invoicy", Reference: ref, ProviderStatus: status})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	h := consumer.NewProvider(env.Store, invoicy.DefaultStatusMap(), holder(t, env), zaptest.NewLogger(t), nil)
	run(t, q, consumer.Each(h.Handle), reg, 30*time.Second, 1)

	q.send(t, event(pending.Reference, "5"))
	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "the authorization to be adopted", func() bool { return env.Document(t, pending.Reference).Status == fiscal.StatusAuthorized })
	q.send(t, event(pending.Reference, "4"), event(notSent.Reference, "5"), event("999", "5"), "{")
	testwait.Until(t, 30*time.Second, 20*time.Millisecond, "the other events", func() bool { return invoicertest.Metric(t, reg, "onceflow_invoicer_messages_total", nil) >= 5 })

	if d := env.Document(t, pending.Reference); d.Status != fiscal.StatusAuthorized || deref(d.ProviderStatus) != "5" {
		t.Fatalf("after a late pending event the document is %s (%v), want still authorized (5)", d.Status, deref(d.ProviderStatus))
	}
	if d := env.Document(t, notSent.Reference); d.Status != fiscal.StatusPending || !d.DueAt.Before(time.Now()) {
		t.Fatalf("a pending document is %s due %s; want still pending, due now for a look-up", d.Status, d.DueAt)
	}
	if keys := env.Outbox(t); len(keys) != 1 || keys[0] != "document:"+pending.Reference+":authorized" {
		t.Fatalf("outbox %v, want one authorized notification", keys)
	}
	for outcome, want := range map[string]float64{"adopted": 1, "stale": 1, "made_due": 1, "unknown_reference": 1, "poison": 1} {
		if got := invoicertest.Metric(t, reg, "onceflow_invoicer_messages_total", map[string]string{"outcome": outcome}); got < want {
			t.Errorf("%s: %v, want %v", outcome, got, want)
		}
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// holder is the sandbox as the InvoiCy provider holding the documents.
func holder(tb testing.TB, env *invoicertest.Env) consumer.Holder {
	tb.Helper()
	return consumer.Holder{Name: "invoicy", Lookup: env.Client(tb, 5*time.Second).Lookup}
}

func TestProviderEventsApplyOnlyConfirmedFromTheHolder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		from           fiscal.Status // here; the provider holds it authorized
		addendum       string        // of the provider's copy, when not ours
		provider, code string        // the event's
		outcome        string
		want           fiscal.Status
		blind          bool // the provider cannot be looked up
	}{
		{"confirmed", fiscal.StatusPendingDGI, "", "invoicy", "5", "adopted", fiscal.StatusAuthorized, false},
		{"from another provider", fiscal.StatusPendingDGI, "", "keyed", "5", "foreign_provider", fiscal.StatusPendingDGI, false},
		{"rejected, the provider says authorized", fiscal.StatusPendingDGI, "", "invoicy", "3", "unconfirmed", fiscal.StatusPendingDGI, false},
		{"voided, the provider says authorized", fiscal.StatusAuthorized, "", "invoicy", "6", "unconfirmed", fiscal.StatusAuthorized, false},
		{"held for another source", fiscal.StatusPendingDGI, "onceflow payment pay-other invoice", "invoicy", "5", "unconfirmed", fiscal.StatusPendingDGI, false},
		{"blind: applied as it comes", fiscal.StatusPendingDGI, "", "invoicy", "5", "adopted", fiscal.StatusAuthorized, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := invoicertest.New(t)
			d := env.Record(t, invoicertest.Payment("pay-confirm", 100_00, false))
			number := env.Hold(t, d, tc.from, tc.addendum)
			hold := holder(t, env)
			if tc.blind {
				hold.Lookup = nil
			}
			h := consumer.NewProvider(env.Store, invoicy.DefaultStatusMap(), hold, zaptest.NewLogger(t), nil)
			b, err := eventsv1.Encode(&eventsv1.ProviderEvent{EventId: "evt-1", Provider: tc.provider, Reference: d.Reference, ProviderStatus: tc.code})
			if err != nil {
				t.Fatal(err)
			}

			outcome, err := h.Handle(context.Background(), string(b))
			if err != nil || outcome != tc.outcome {
				t.Fatalf("outcome %s (%v), want %s", outcome, err, tc.outcome)
			}
			got := env.Document(t, d.Reference)
			if got.Status != tc.want || deref(got.ProviderNumber) != number {
				t.Fatalf("document %s number %d, want %s number %d", got.Status, deref(got.ProviderNumber), tc.want, number)
			}
			if keys := env.Outbox(t); (tc.outcome == "adopted") != (len(keys) == 1) {
				t.Fatalf("outbox %v after %s", keys, tc.outcome)
			}
			if queries := env.Sandbox.Stats().Queries; tc.blind && queries != 0 {
				t.Fatalf("%d look-ups in blind mode, want none", queries)
			}
		})
	}
}

func TestConfirmedRejectionOpensACase(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-dgi-rejects", 100_00, false))
	env.Sandbox.SetRule(d.Reference, fiscalsim.Rule{Reject: true})
	env.Hold(t, d, fiscal.StatusPendingDGI, "") // DGI rejected it after the send
	h := consumer.NewProvider(env.Store, invoicy.DefaultStatusMap(), holder(t, env), zaptest.NewLogger(t), nil)
	b, err := eventsv1.Encode(&eventsv1.ProviderEvent{EventId: "evt-rej", Provider: "invoicy", Reference: d.Reference, ProviderStatus: "3"})
	if err != nil {
		t.Fatal(err)
	}

	if outcome, err := h.Handle(context.Background(), string(b)); err != nil || outcome != "adopted" {
		t.Fatalf("outcome %s (%v), want adopted", outcome, err)
	}
	c, err := env.Store.OpenCaseOf(context.Background(), cases.DocumentRejected, store.DocumentSubject(d.ID))
	if err != nil || deref(c.DocumentID) != d.ID || c.PSPPaymentID != "pay-dgi-rejects" || c.Evidence["provider_status"] != "3" {
		t.Fatalf("case %+v, %v; want an open document_rejected case with the provider's status 3", c, err)
	}
}
