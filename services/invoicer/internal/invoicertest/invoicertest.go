// Package invoicertest builds what the invoicer's tests share: a migrated
// database of their own, the fiscal sandbox in process with an InvoiCy
// client pointed at it, and billing events to record. Only tests import it.
package invoicertest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/onceflow/onceflow/db"
	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/invoicy"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/consumer"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// Sandbox credentials.
const (
	EmpCodigo = "SUC-TEST"
	EmpPK     = "PK-TEST"
	AccessKey = "CLAVE-TEST"
)

// BillingKey is the key the invoicer's tests sign billing messages with
// and trust (INVOICER_BILLING_KEYS).
const BillingKey = "invoicer-test:invoicer-test-billing-secret"

// SignedMessage returns the SendMessage input of body to queue url, signed
// with BillingKey as the relay signs what it publishes.
func SignedMessage(tb testing.TB, url, body string) *sqs.SendMessageInput {
	tb.Helper()
	k, err := msgauth.ParseKey(BillingKey)
	if err != nil {
		tb.Fatal(err)
	}
	return &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body),
		MessageAttributes: k.Sign(body, outbox.Attributes("billing.test", "", ""))}
}

// Env is one test's database, sandbox and provider client.
type Env struct {
	DSN      string
	Pool     *pgxpool.Pool
	Store    *store.Store
	Sandbox  *fiscalsim.Server
	BaseURL  string // the sandbox's InvoiCy root
	KeyedURL string // the sandbox's keyed JSON API root
}

// New migrates a fresh database and starts a fiscal sandbox.
func New(tb testing.TB) *Env {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := pgtest.NewDatabase(tb)
	if err := db.Migrate(ctx, dsn, "invoicer"); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		tb.Fatalf("pool: %v", err)
	}
	tb.Cleanup(pool.Close)
	sb := fiscalsim.New(fiscalsim.Config{EmpCodigo: EmpCodigo, EmpPK: EmpPK, AccessKey: AccessKey})
	srv := httptest.NewServer(sb)
	tb.Cleanup(srv.Close)
	return &Env{DSN: dsn, Pool: pool, Store: store.New(pool), Sandbox: sb, BaseURL: srv.URL + "/InvoiCy/", KeyedURL: srv.URL + "/api"}
}

// Client returns an InvoiCy client for the sandbox with the given timeout.
func (e *Env) Client(tb testing.TB, timeout time.Duration) *invoicy.Client {
	tb.Helper()
	c, err := invoicy.New(invoicy.Config{BaseURL: e.BaseURL, EmpCodigo: EmpCodigo, EmpPK: EmpPK, AccessKey: AccessKey, Timeout: timeout}, nil)
	if err != nil {
		tb.Fatalf("invoicy client: %v", err)
	}
	return c
}

// Payment returns the billing event of a paid payment of amountMinor UYU
// by an anonymous consumer (an e-Ticket), or by a RUT buyer when rut is set.
func Payment(id string, amountMinor int64, rut bool) *eventsv1.BillingEvent {
	buyer := &eventsv1.Buyer{}
	if rut {
		buyer = &eventsv1.Buyer{DocType: "RUT", DocCountry: "UY", DocNumber: "210000000019", LegalName: "Acme SA"}
	}
	return &eventsv1.BillingEvent{EventKey: "payment:" + id + ":paid", Kind: eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE,
		SourceKind: "payment", SourceRef: id, AmountMinor: amountMinor, Currency: "UYU", Buyer: buyer,
		Lines: []*eventsv1.Line{{Description: "Plan", Quantity: 1, UnitMinor: amountMinor, AmountMinor: amountMinor}}}
}

// Refund returns the billing event of a refund of a payment.
func Refund(id, paymentID string, amountMinor int64) *eventsv1.BillingEvent {
	ev := Payment(paymentID, amountMinor, false)
	ev.EventKey, ev.Kind, ev.SourceKind, ev.SourceRef, ev.PaymentRef = "refund:"+id+":succeeded",
		eventsv1.DocumentKind_DOCUMENT_KIND_CREDIT_NOTE, "refund", id, paymentID
	return ev
}

// Record records ev as the billing consumer would and returns the
// document.
func (e *Env) Record(tb testing.TB, ev *eventsv1.BillingEvent) store.Document {
	tb.Helper()
	p, err := consumer.Params(ev)
	if err != nil {
		tb.Fatalf("params: %v", err)
	}
	rec := e.Store.RecordDocuments(context.Background(), []store.NewDocument{p})[0]
	if rec.Err != nil {
		tb.Fatalf("record: %v", rec.Err)
	}
	return e.Document(tb, rec.Reference)
}

// Document returns the document with reference ref.
func (e *Env) Document(tb testing.TB, ref string) store.Document {
	tb.Helper()
	d, err := e.Store.DocumentByReference(context.Background(), ref)
	if err != nil {
		tb.Fatalf("document %s: %v", ref, err)
	}
	return d
}

// Attempts returns the provider calls recorded for document id.
func (e *Env) Attempts(tb testing.TB, id int64) []store.Attempt {
	tb.Helper()
	a, err := e.Store.Attempts(context.Background(), id)
	if err != nil {
		tb.Fatalf("attempts: %v", err)
	}
	return a
}

// Hold makes the sandbox hold d (an e-Ticket recorded from Payment) under
// d's reference as if it had been sent, with addendum instead of d's own
// when addendum is set, and sets d's status here to status, due in an hour.
// It returns the number the sandbox gave it.
func (e *Env) Hold(tb testing.TB, d store.Document, status fiscal.Status, addendum string) int64 {
	tb.Helper()
	if addendum == "" {
		addendum = fiscal.Addendum(d.SourceKind, d.SourceRef, d.Kind)
	}
	doc := fiscal.Document{Reference: d.Reference, Type: d.CFEType, IssueDate: time.Now(), Currency: d.Currency,
		TotalMinor: d.AmountMinor, Addendum: addendum,
		Lines: []fiscal.Line{{Description: "Plan", Quantity: 1, UnitMinor: d.AmountMinor, AmountMinor: d.AmountMinor}}}
	held, err := e.Client(tb, 5*time.Second).Emit(context.Background(), doc)
	if err != nil {
		tb.Fatalf("hold %s at the sandbox: %v", d.Reference, err)
	}
	if _, err := e.Pool.Exec(context.Background(), `UPDATE invoicer.fiscal_documents SET status = $1, provider_series = $2,
provider_number = $3, due_at = now() + interval '1 hour', audit_changed_at = now() WHERE id = $4`, status, held.Series, held.Number, d.ID); err != nil {
		tb.Fatalf("hold %s: %v", d.Reference, err)
	}
	return held.Number
}

// Outbox returns the event keys in the invoicer's outbox, in order.
func (e *Env) Outbox(tb testing.TB) []string {
	tb.Helper()
	rows, err := e.Pool.Query(context.Background(), "SELECT event_key FROM invoicer.outbox ORDER BY id")
	if err != nil {
		tb.Fatalf("outbox: %v", err)
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			tb.Fatalf("outbox: %v", err)
		}
		keys = append(keys, k)
	}
	return keys
}

// Metric sums the values of the counters or gauges called name in reg
// whose labels include every pair in labels.
func Metric(tb testing.TB, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatalf("gather: %v", err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// Histogram returns the histogram name in reg (the one without labels),
// failing tb when reg has none.
func Histogram(tb testing.TB, reg prometheus.Gatherer, name string) *dto.Histogram {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetHistogram()
		}
	}
	tb.Fatalf("no histogram %s", name)
	return nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}
