// Package sweep is the reconciler's missing-document sweep, the safety net of
// guarantee 5: every paid payment older than a grace period must have an
// invoice and every succeeded refund a credit note in invoicer.fiscal_documents.
// For each one that has not, the sweep reads the event ingest announced in its
// outbox and sends that payload to the billing queue again. That is harmless
// by design: the invoicer records documents with ON CONFLICT DO NOTHING, so an
// event that arrives twice still yields one document.
//
// The sweep reads ingest and invoicer through their own connections (which may
// be different databases), a page at a time with short keyset queries, and
// holds no transaction open; it never writes either schema.
package sweep

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// Sender sends one message to SQS; *sqs.Client is one.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Config tunes the sweep.
type Config struct {
	// QueueURL is the billing queue the invoicer consumes.
	QueueURL string
	// Grace is how old a payment or refund must be before its missing
	// document counts: younger ones may still be on their way.
	Grace time.Duration
	// PageSize is how many payments or refunds one query reads.
	PageSize int
	// MaxPerRun caps the events one Run sends, so that a misconfigured
	// invoicer database (which makes every document look missing) cannot
	// flood the queue; the rest wait for the next run.
	MaxPerRun int
}

// Result counts what one Run saw and did.
type Result struct {
	Checked       int  // payments and refunds past the grace period
	Missing       int  // of those, the ones without their document
	Republished   int  // missing ones whose event was sent again
	MissingEvents int  // missing ones without an outbox row to send
	Capped        bool // Run stopped at MaxPerRun
}

// Metrics are the sweep's Prometheus counters.
type Metrics struct {
	republished   prometheus.Counter
	missingEvents prometheus.Counter
}

// NewMetrics registers the sweep's counters with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		republished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_republished_total",
			Help: "Billing events sent again because their fiscal document was missing after the grace period.",
		}),
		missingEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "onceflow_reconciler_missing_events_total",
			Help: "Paid payments or succeeded refunds without a document whose outbox event does not exist either.",
		}),
	}
	reg.MustRegister(m.republished, m.missingEvents)
	return m
}

// Sweeper runs the sweep. It is safe for concurrent use, and two sweeps at
// once (two run-once jobs, a job and the leader) only send some events twice.
type Sweeper struct {
	ingest   *store.IngestReader
	invoicer *store.InvoicerReader
	sender   Sender
	cfg      Config
	log      *zap.Logger
	metrics  *Metrics
}

// New returns a Sweeper reading payments, refunds and the outbox through
// ingest, documents through invoicer, and sending with sender.
func New(ingest *store.IngestReader, invoicer *store.InvoicerReader, sender Sender, cfg Config, log *zap.Logger, m *Metrics) *Sweeper {
	return &Sweeper{ingest: ingest, invoicer: invoicer, sender: sender, cfg: cfg, log: log, metrics: m}
}

// Run sweeps the payments, then the refunds, that became final before
// now minus the grace period. It returns the counts so far together with the
// first error: a database or SQS failure ends the run, and the next run starts
// over, which is harmless since sending an event twice is.
func (s *Sweeper) Run(ctx context.Context) (Result, error) {
	cutoff := time.Now().Add(-s.cfg.Grace)
	var res Result
	for _, src := range s.sources() {
		if err := s.sweep(ctx, src, cutoff, &res); err != nil {
			return res, err
		}
		if res.Capped {
			s.log.Warn("sweep stopped at the per-run maximum", zap.Int("max_per_run", s.cfg.MaxPerRun),
				zap.String("source_kind", src.kind))
			break
		}
	}
	return res, nil
}

// cursor is a keyset position: when a source became final, and its id.
type cursor struct {
	at time.Time
	id string
}

// source is one kind of thing that must have a document.
type source struct {
	kind     string                 // fiscal_documents.source_kind
	docKind  string                 // fiscal_documents.kind
	eventKey func(id string) string // its event's key in ingest.outbox
	page     func(context.Context, time.Time, cursor, int) ([]cursor, error)
}

func (s *Sweeper) sources() []source {
	return []source{
		{kind: "payment", docKind: "invoice", eventKey: PaymentEventKey, page: s.paymentsPage},
		{kind: "refund", docKind: "credit_note", eventKey: RefundEventKey, page: s.refundsPage},
	}
}

// PaymentEventKey is the outbox key ingest gives a payment's paid event.
func PaymentEventKey(id string) string { return "payment:" + id + ":paid" }

// RefundEventKey is the outbox key ingest gives a refund's succeeded event.
func RefundEventKey(id string) string { return "refund:" + id + ":succeeded" }

func (s *Sweeper) paymentsPage(ctx context.Context, before time.Time, after cursor, limit int) ([]cursor, error) {
	rows, err := s.ingest.PaymentsPaidBefore(ctx, before, store.Payment{ID: after.id, PaidAt: after.at}, limit)
	if err != nil {
		return nil, err
	}
	out := make([]cursor, len(rows))
	for i, r := range rows {
		out[i] = cursor{at: r.PaidAt, id: r.ID}
	}
	return out, nil
}

func (s *Sweeper) refundsPage(ctx context.Context, before time.Time, after cursor, limit int) ([]cursor, error) {
	rows, err := s.ingest.RefundsSucceededBefore(ctx, before, store.Refund{ID: after.id, SucceededAt: after.at}, limit)
	if err != nil {
		return nil, err
	}
	out := make([]cursor, len(rows))
	for i, r := range rows {
		out[i] = cursor{at: r.SucceededAt, id: r.ID}
	}
	return out, nil
}

// sweep walks src page by page from the oldest, republishing what is missing.
func (s *Sweeper) sweep(ctx context.Context, src source, cutoff time.Time, res *Result) error {
	var after cursor // the zero time sorts before every real one
	for {
		page, err := src.page(ctx, cutoff, after, s.cfg.PageSize)
		if err != nil {
			return err
		}
		res.Checked += len(page)
		missing, err := s.missing(ctx, src, page)
		if err != nil {
			return err
		}
		for _, id := range missing {
			if res.Republished >= s.cfg.MaxPerRun {
				res.Capped = true
				return nil
			}
			res.Missing++
			if err := s.republish(ctx, src, id, res); err != nil {
				return err
			}
		}
		if len(page) < s.cfg.PageSize {
			return nil
		}
		after = page[len(page)-1]
	}
}

// missing returns the ids in page that have no document of src's kind.
func (s *Sweeper) missing(ctx context.Context, src source, page []cursor) ([]string, error) {
	if len(page) == 0 {
		return nil, nil
	}
	ids := make([]string, len(page))
	for i, c := range page {
		ids[i] = c.id
	}
	have, err := s.invoicer.SourcesWithDocument(ctx, src.kind, src.docKind, ids)
	if err != nil {
		return nil, err
	}
	found := make(map[string]bool, len(have))
	for _, ref := range have {
		found[ref] = true
	}
	var out []string
	for _, id := range ids {
		if !found[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// republish sends the outbox event of source id to the billing queue again,
// or counts it as a missing event when ingest never wrote one.
func (s *Sweeper) republish(ctx context.Context, src source, id string, res *Result) error {
	key := src.eventKey(id)
	log := s.log.With(zap.String("source_kind", src.kind), zap.String("source_ref", id), zap.String("event_key", key))
	ev, err := s.ingest.Event(ctx, key)
	if errkind.Is(err, errkind.NotFound) {
		// Counted, logged and alerted on (OnceflowMissingEvents): ingest
		// recorded the payment as paid without its event, which only a
		// person can explain.
		res.MissingEvents++
		s.metrics.missingEvents.Inc()
		log.Warn("document missing and no outbox event to send again")
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := s.sender.SendMessage(ctx, Message(s.cfg.QueueURL, ev)); err != nil {
		return fmt.Errorf("send %s: %w", key, err)
	}
	res.Republished++
	s.metrics.republished.Inc()
	log.Info("document missing, event sent again", zap.String("type", ev.EventType))
	return nil
}

// Message is the SQS message for an outbox event, with the attributes the
// relay gives it: type, event_key, content_type, and traceparent when set.
func Message(queueURL string, ev store.Event) *sqs.SendMessageInput {
	return &sqs.SendMessageInput{
		QueueUrl:          aws.String(queueURL),
		MessageBody:       aws.String(string(ev.Payload)),
		MessageAttributes: outbox.Attributes(ev.EventType, ev.EventKey, ev.Traceparent),
	}
}
