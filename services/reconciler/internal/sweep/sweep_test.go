package sweep_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/sqstest"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
	"github.com/onceflow/onceflow/services/reconciler/internal/sweep"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// attrs is what the relay puts on a billing event's message.
func attrs(ev reconcilertest.Event) map[string]string {
	a := map[string]string{"type": ev.Type, "event_key": ev.Key, "content_type": "application/json"}
	if ev.Traceparent != "" {
		a["traceparent"] = ev.Traceparent
	}
	return a
}

func message(ev reconcilertest.Event) reconcilertest.Message {
	return reconcilertest.Message{Body: ev.Payload, Attrs: attrs(ev)}
}

func TestSweep(t *testing.T) {
	t.Parallel()
	sqsClient := sqstest.Client(t)
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	recent := time.Now().Add(-time.Minute)
	traced := reconcilertest.PaymentPaid("p1")
	traced.Traceparent = traceparent

	tests := []struct {
		name      string
		pageSize  int
		maxPerRun int
		seed      func(testing.TB, *reconcilertest.DB)
		want      sweep.Result
		wantMsgs  []reconcilertest.Message
	}{{
		name: "old payment without invoice is sent again with its attributes",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Outbox(tb, traced)
		},
		want:     sweep.Result{Checked: 1, Missing: 1, Republished: 1},
		wantMsgs: []reconcilertest.Message{message(traced)},
	}, {
		name: "old payment with its invoice is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Outbox(tb, reconcilertest.PaymentPaid("p1"))
			db.Invoice(tb, "p1")
		},
		want: sweep.Result{Checked: 1},
	}, {
		name: "payment paid within the grace period is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", recent)
			db.Outbox(tb, reconcilertest.PaymentPaid("p1"))
		},
		want: sweep.Result{},
	}, {
		name: "unpaid payment is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", time.Time{})
		},
		want: sweep.Result{},
	}, {
		name: "old refund without credit note is sent again",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Invoice(tb, "p1")
			db.Refund(tb, "r1", "p1", old)
			db.Outbox(tb, reconcilertest.RefundSucceeded("r1"))
		},
		want:     sweep.Result{Checked: 2, Missing: 1, Republished: 1},
		wantMsgs: []reconcilertest.Message{message(reconcilertest.RefundSucceeded("r1"))},
	}, {
		name: "old refund with its credit note is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Invoice(tb, "p1")
			db.Refund(tb, "r1", "p1", old)
			db.Outbox(tb, reconcilertest.RefundSucceeded("r1"))
			db.CreditNote(tb, "r1", "p1")
		},
		want: sweep.Result{Checked: 2},
	}, {
		name: "pending refund is left alone",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
			db.Invoice(tb, "p1")
			db.Refund(tb, "r1", "p1", time.Time{})
		},
		want: sweep.Result{Checked: 1},
	}, {
		name: "paid payment without outbox row is a missing event, not a message",
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			db.Payment(tb, "p1", old)
		},
		want: sweep.Result{Checked: 1, Missing: 1, MissingEvents: 1},
	}, {
		name:     "pages through payments paid at the same instant",
		pageSize: 2,
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			for i := range 5 {
				id := fmt.Sprintf("p%d", i)
				db.Payment(tb, id, old)
				db.Outbox(tb, reconcilertest.PaymentPaid(id))
			}
			db.Invoice(tb, "p2")
		},
		want: sweep.Result{Checked: 5, Missing: 4, Republished: 4},
		wantMsgs: []reconcilertest.Message{
			message(reconcilertest.PaymentPaid("p0")), message(reconcilertest.PaymentPaid("p1")),
			message(reconcilertest.PaymentPaid("p3")), message(reconcilertest.PaymentPaid("p4")),
		},
	}, {
		name:      "stops at the per-run maximum",
		maxPerRun: 2,
		seed: func(tb testing.TB, db *reconcilertest.DB) {
			for i := range 3 {
				id := fmt.Sprintf("p%d", i)
				db.Payment(tb, id, old.Add(time.Duration(i)*time.Second))
				db.Outbox(tb, reconcilertest.PaymentPaid(id))
			}
		},
		want: sweep.Result{Checked: 3, Missing: 2, Republished: 2, Capped: true},
		wantMsgs: []reconcilertest.Message{
			message(reconcilertest.PaymentPaid("p0")), message(reconcilertest.PaymentPaid("p1")),
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := reconcilertest.NewDB(t)
			tt.seed(t, db)
			_, queueURL := sqstest.Queue(t, sqsClient, "reconciler-sweep", 5)
			cfg := sweep.Config{QueueURL: queueURL, Grace: 10 * time.Minute, PageSize: 500, MaxPerRun: 5000}
			if tt.pageSize > 0 {
				cfg.PageSize = tt.pageSize
			}
			if tt.maxPerRun > 0 {
				cfg.MaxPerRun = tt.maxPerRun
			}
			reg := prometheus.NewRegistry()
			s := sweep.New(store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool), sqsClient, cfg, zaptest.NewLogger(t), sweep.NewMetrics(reg))

			got, err := s.Run(context.Background(), store.New(db.Pool))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !tt.want.Capped {
				tt.want.Cases = tt.want.Missing // each missing one opens its case
			} else {
				tt.want.Cases = tt.want.Republished
			}
			if got != tt.want {
				t.Errorf("Run = %+v, want %+v", got, tt.want)
			}
			msgs := reconcilertest.Receive(t, sqsClient, queueURL, len(tt.wantMsgs))
			sortMessages(msgs)
			if len(msgs) != len(tt.wantMsgs) || (len(msgs) > 0 && !reflect.DeepEqual(msgs, tt.wantMsgs)) {
				t.Errorf("queue holds %+v, want %+v", msgs, tt.wantMsgs)
			}
			assertCounter(t, reg, "onceflow_reconciler_republished_total", tt.want.Republished)
			assertCounter(t, reg, "onceflow_reconciler_missing_events_total", tt.want.MissingEvents)
		})
	}
}

func sortMessages(msgs []reconcilertest.Message) {
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].Attrs["event_key"] < msgs[j].Attrs["event_key"] })
}

func assertCounter(tb testing.TB, reg *prometheus.Registry, name string, want int) {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			if got := f.GetMetric()[0].GetCounter().GetValue(); got != float64(want) {
				tb.Errorf("%s = %v, want %d", name, got, want)
			}
			return
		}
	}
	tb.Errorf("%s not registered", name)
}

// TestSweepAcrossDatabases keeps ingest and invoicer in different databases,
// as production may: the sweep must not rely on a join between them.
func TestSweepAcrossDatabases(t *testing.T) {
	t.Parallel()
	sqsClient := sqstest.Client(t)
	ingest, invoicer := reconcilertest.NewDB(t), reconcilertest.NewDB(t)
	old := time.Now().Add(-time.Hour)
	for _, id := range []string{"p1", "p2"} {
		ingest.Payment(t, id, old)
		ingest.Outbox(t, reconcilertest.PaymentPaid(id))
	}
	invoicer.Invoice(t, "p1")
	_, queueURL := sqstest.Queue(t, sqsClient, "reconciler-sweep", 5)
	cfg := sweep.Config{QueueURL: queueURL, Grace: 10 * time.Minute, PageSize: 500, MaxPerRun: 5000}
	s := sweep.New(store.NewIngestReader(ingest.Pool), store.NewInvoicerReader(invoicer.Pool), sqsClient, cfg,
		zaptest.NewLogger(t), sweep.NewMetrics(prometheus.NewRegistry()))

	got, err := s.Run(context.Background(), store.New(ingest.Pool))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := (sweep.Result{Checked: 2, Missing: 1, Republished: 1, Cases: 1}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	msgs := reconcilertest.Receive(t, sqsClient, queueURL, 1)
	if want := []reconcilertest.Message{message(reconcilertest.PaymentPaid("p2"))}; !reflect.DeepEqual(msgs, want) {
		t.Errorf("queue holds %+v, want %+v", msgs, want)
	}
}

// TestSweepSignsWhatItSendsAgain gives the sweep a signing key and checks
// the event it sends again verifies under a keyset holding that key, as the
// invoicer's does.
func TestSweepSignsWhatItSendsAgain(t *testing.T) {
	t.Parallel()
	sqsClient := sqstest.Client(t)
	db := reconcilertest.NewDB(t)
	db.Payment(t, "p-signed", time.Now().Add(-time.Hour))
	db.Outbox(t, reconcilertest.PaymentPaid("p-signed"))
	key, err := msgauth.ParseKey("reconciler-test:reconciler-test-secret")
	if err != nil {
		t.Fatal(err)
	}
	_, queueURL := sqstest.Queue(t, sqsClient, "reconciler-sweep", 5)
	cfg := sweep.Config{QueueURL: queueURL, Grace: 10 * time.Minute, PageSize: 500, MaxPerRun: 5000, Signer: &key}
	s := sweep.New(store.NewIngestReader(db.Pool), store.NewInvoicerReader(db.Pool), sqsClient, cfg,
		zaptest.NewLogger(t), sweep.NewMetrics(prometheus.NewRegistry()))
	if _, err := s.Run(context.Background(), store.New(db.Pool)); err != nil {
		t.Fatalf("Run: %v", err)
	}
	out, err := sqsClient.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL),
		MaxNumberOfMessages: 1, WaitTimeSeconds: 5, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %d messages, %v; want the event sent again", len(out.Messages), err)
	}
	trusting, err := msgauth.ParseKeyset("reconciler-test:reconciler-test-secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := trusting.Verify(aws.ToString(out.Messages[0].Body), out.Messages[0].MessageAttributes); err != nil {
		t.Fatalf("event sent again: %v, want it signed by reconciler-test", err)
	}
}
