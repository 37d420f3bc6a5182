package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// authorizedCount counts the run's authorized invoices.
const authorizedCount = `
SELECT count(*) FROM invoicer.fiscal_documents d
JOIN ingest.payments p ON p.id = d.source_ref
JOIN ingest.orders o ON o.id = p.order_id
WHERE d.source_kind = 'payment' AND d.kind = 'invoice' AND d.status = 'authorized'
  AND o.merchant_order_id LIKE $1`

// notifiedCount counts the run's invoices whose authorization ingest has
// recorded from the invoicer's notification (ingest.documents): the last
// step of a document through the pipeline.
const notifiedCount = `
SELECT count(*) FROM ingest.documents d
JOIN ingest.payments p ON p.id = d.payment_ref
JOIN ingest.orders o ON o.id = p.order_id
WHERE d.source_kind = 'payment' AND d.kind = 'invoice' AND d.status = 'authorized'
  AND o.merchant_order_id LIKE $1`

// e2eHops splits the run's end-to-end latency by hop, from the rows each
// service writes: the apply worker (receipt received → processed), the relay
// (outbox row created → published), SQS and the invoicer's consumer
// (published → document recorded), and the emission loop (recorded →
// authorized); per hop its median and 99th percentile in milliseconds.
const e2eHops = `
WITH hops AS (
  SELECT extract(epoch FROM r.processed_at - r.received_at) * 1000 AS apply,
         extract(epoch FROM ob.published_at - ob.created_at) * 1000 AS relay,
         extract(epoch FROM d.created_at - ob.published_at) * 1000 AS record,
         extract(epoch FROM d.updated_at - d.created_at) * 1000 AS emit
  FROM invoicer.fiscal_documents d
  JOIN ingest.payments p ON p.id = d.source_ref
  JOIN ingest.orders o ON o.id = p.order_id
  JOIN ingest.webhook_receipts r ON r.scope = 'dlocal' AND r.dedupe_key = 'payment:' || p.id || ':PAID'
  JOIN ingest.outbox ob ON ob.event_key = 'payment:' || p.id || ':paid'
  WHERE d.source_kind = 'payment' AND d.kind = 'invoice' AND d.status = 'authorized'
    AND o.merchant_order_id LIKE $1)
SELECT hop, percentile_disc(0.5) WITHIN GROUP (ORDER BY ms), percentile_disc(0.99) WITHIN GROUP (ORDER BY ms)
FROM hops, LATERAL (VALUES ('1 apply', apply), ('2 relay', relay), ('3 record', record), ('4 emit', emit)) AS v(hop, ms)
GROUP BY hop ORDER BY hop`

// slowestPayment is the run's payment with the longest webhook → authorized
// time, with that time split by hop (as in e2eHops), in milliseconds.
const slowestPayment = `
SELECT p.id, extract(epoch FROM d.updated_at - r.received_at) * 1000,
       extract(epoch FROM r.processed_at - r.received_at) * 1000,
       extract(epoch FROM ob.published_at - ob.created_at) * 1000,
       extract(epoch FROM d.created_at - ob.published_at) * 1000,
       extract(epoch FROM d.updated_at - d.created_at) * 1000
FROM invoicer.fiscal_documents d
JOIN ingest.payments p ON p.id = d.source_ref
JOIN ingest.orders o ON o.id = p.order_id
JOIN ingest.webhook_receipts r ON r.scope = 'dlocal' AND r.dedupe_key = 'payment:' || p.id || ':PAID'
JOIN ingest.outbox ob ON ob.event_key = 'payment:' || p.id || ':paid'
WHERE d.source_kind = 'payment' AND d.kind = 'invoice' AND d.status = 'authorized'
  AND o.merchant_order_id LIKE $1
ORDER BY d.updated_at - r.received_at DESC LIMIT 1`

// Hop is one hop of the pipeline's latency, in milliseconds.
type Hop struct {
	Name string  `json:"hop"`
	P50  float64 `json:"p50_ms"`
	P99  float64 `json:"p99_ms"`
}

// pipelineRun pushes payments through the whole stack and measures each
// from webhook to authorized document.
type pipelineRun struct {
	s        *stack.Stack
	db       *pgxpool.Pool
	prefix   string // merchant order ids of this run start with it
	payments int
	rate     int // payments per second; 0 creates them as fast as workers go
	workers  int
	timeout  time.Duration
	progress func(format string, args ...any)
	paying   func() // called as the first payment is created, when set
	paid     func() // called once ingest has recorded every invoice's authorization, when set
}

// run creates one buyer and an order per payment at ingest (not timed),
// then the payments at the PSP sandbox, which notifies ingest, and waits
// for every invoice to be authorized, and for ingest to have recorded it.
// It returns the run's timeline, read once: its Latencies for the figures,
// itself for the throughput plot.
func (p pipelineRun) run(ctx context.Context) (Timeline, error) {
	buyer, err := CreateBuyer(ctx, p.s)
	if err != nil {
		return Timeline{}, err
	}
	if err := p.each(ctx, func(ctx context.Context, order string) error { return CreateOrder(ctx, p.s, order, buyer) }); err != nil {
		return Timeline{}, err
	}
	p.progress("%d orders created; creating the payments at the PSP sandbox", p.payments)
	if p.paying != nil {
		p.paying()
	}
	pay := func(ctx context.Context, order string) error { return Pay(ctx, p.s, order) }
	if p.rate > 0 {
		err = p.paced(ctx, pay)
	} else {
		err = p.each(ctx, pay)
	}
	if err != nil {
		return Timeline{}, err
	}
	if err := p.wait(ctx, authorizedCount, "invoices authorized"); err != nil {
		return Timeline{}, err
	}
	if err := p.wait(ctx, notifiedCount, "authorizations recorded by ingest"); err != nil {
		return Timeline{}, err
	}
	if p.paid != nil {
		p.paid()
	}
	return p.completeTimeline(ctx)
}

// amountMinor is every bench payment's amount, in centésimos.
const amountMinor = 125000

// CreateBuyer creates the one buyer (a CI holder) of a run's orders at
// ingest and returns its id.
func CreateBuyer(ctx context.Context, s *stack.Stack) (string, error) {
	var buyer struct {
		ID string `json:"id"`
	}
	err := s.API(ctx, s.IngestURL, "/v1/customers", map[string]any{
		"doc_type": "CI", "doc_country": "UY", "doc_number": "19119365", "legal_name": "Bench Buyer",
		"address": "Av. 18 de Julio 1000", "city": "Montevideo", "department": "Montevideo", "country": "UY",
	}, "", &buyer)
	if err != nil {
		return "", fmt.Errorf("create buyer: %w", err)
	}
	return buyer.ID, nil
}

// CreateOrder creates the merchant's order at ingest for buyer, one line.
// The order id is its Idempotency-Key, which also lets net/http send the
// request again on another connection when the one it picked was closed by
// ingest as idle meanwhile ("server closed idle connection"): a soak met
// that once in 613,899 orders and stopped.
func CreateOrder(ctx context.Context, s *stack.Stack, order, buyer string) error {
	return s.API(ctx, s.IngestURL, "/v1/orders", map[string]any{
		"merchant_order_id": order, "customer_id": buyer, "amount_minor": amountMinor, "currency": "UYU",
		"lines": []map[string]any{{"description": "Credits pack", "quantity": 1, "unit_minor": amountMinor, "amount_minor": amountMinor}},
	}, "order-"+order, nil)
}

// each calls f for every order of the run, workers at a time.
func (p pipelineRun) each(ctx context.Context, f func(ctx context.Context, order string) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.workers)
	for i := range p.payments {
		g.Go(func() error { return f(gctx, fmt.Sprintf("%s%06d", p.prefix, i)) })
	}
	return g.Wait()
}

// Pay creates the order's payment at the PSP sandbox (dLocal), which
// notifies the stack's ingest once it is paid.
func Pay(ctx context.Context, s *stack.Stack, order string) error {
	_, err := s.CreatePayment(ctx, order, amountMinor, s.IngestURL+"/webhooks/dlocal")
	return err
}

// paced calls f for every order at p.rate per second (see Paced).
func (p pipelineRun) paced(ctx context.Context, f func(ctx context.Context, order string) error) error {
	return Paced(ctx, p.payments, p.rate, func(ctx context.Context, i int) error { return f(ctx, fmt.Sprintf("%s%06d", p.prefix, i)) })
}

// Paced calls f for i from 0 to n-1 at rate calls per second, on a fixed
// schedule whatever the answers take (an open loop), and returns the first
// error, which stops the schedule.
func Paced(ctx context.Context, n, rate int, f func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for i := range n {
		if !backoff.Sleep(gctx, time.Until(start.Add(time.Duration(i)*time.Second/time.Duration(rate)))) {
			break
		}
		g.Go(func() error { return f(gctx, i) })
	}
	return g.Wait()
}

// wait polls until count (authorizedCount or notifiedCount) reaches the
// run's payments, reporting every 5 s. It looks once a second: the figures
// come from the rows' own timestamps, not from when the poll sees them, and
// the count's join, run ten times a second, took a tenth of a core from the
// stack it measures.
func (p pipelineRun) wait(ctx context.Context, count, what string) error {
	began := time.Now()
	lastReport := began
	for {
		var n int
		if err := p.db.QueryRow(ctx, count, p.prefix+"%").Scan(&n); err != nil {
			return fmt.Errorf("count %s: %w", what, err)
		}
		if n >= p.payments {
			return nil
		}
		if time.Since(began) > p.timeout {
			return fmt.Errorf("%d of %d %s after %s (-timeout)", n, p.payments, what, p.timeout)
		}
		if time.Since(lastReport) >= 5*time.Second {
			p.progress("%d of %d %s", n, p.payments, what)
			lastReport = time.Now()
		}
		if !backoff.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// hops reads the latency of each hop (see e2eHops).
func (p pipelineRun) hops(ctx context.Context) ([]Hop, error) {
	rows, err := p.db.Query(ctx, e2eHops, p.prefix+"%")
	if err != nil {
		return nil, fmt.Errorf("read the hops' latencies: %w", err)
	}
	hops, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Hop, error) {
		var h Hop
		err := row.Scan(&h.Name, &h.P50, &h.P99)
		h.Name = h.Name[2:] // drop the sort prefix
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the hops' latencies: %w", err)
	}
	return hops, nil
}

// receiptSpan is how long, in seconds, the run's PAID webhooks took to
// arrive, first to last.
const receiptSpan = `
SELECT coalesce(extract(epoch FROM max(r.received_at) - min(r.received_at)), 0)
FROM ingest.webhook_receipts r
JOIN ingest.payments p ON r.scope = 'dlocal' AND r.dedupe_key = 'payment:' || p.id || ':PAID'
JOIN ingest.orders o ON o.id = p.order_id
WHERE o.merchant_order_id LIKE $1`

// slowest describes the run's slowest payment (see slowestPayment), so a
// straggler can be found in the services' logs by its id, and how long the
// webhooks took to arrive: a late webhook stretches the run, not a hop.
func (p pipelineRun) slowest(ctx context.Context) (string, error) {
	var id string
	var total, apply, relay, record, emit, span float64
	err := p.db.QueryRow(ctx, slowestPayment, p.prefix+"%").Scan(&id, &total, &apply, &relay, &record, &emit)
	if err == nil {
		err = p.db.QueryRow(ctx, receiptSpan, p.prefix+"%").Scan(&span)
	}
	if err != nil {
		return "", fmt.Errorf("read the slowest payment: %w", err)
	}
	return fmt.Sprintf("webhooks arrived over %.1f s; slowest payment %s: %.0f ms (apply %.0f, relay %.0f, record %.0f, emit %.0f)",
		span, id, total, apply, relay, record, emit), nil
}

// completeTimeline reads the run's timeline and checks that it holds every
// payment of the run.
func (p pipelineRun) completeTimeline(ctx context.Context) (Timeline, error) {
	t, err := p.timeline(ctx)
	if err != nil {
		return Timeline{}, err
	}
	if len(t.Authorized) != p.payments {
		return Timeline{}, fmt.Errorf("end-to-end latencies: %d rows for %d payments", len(t.Authorized), p.payments)
	}
	return t, nil
}
