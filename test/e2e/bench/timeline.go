package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// e2eTimeline is, for each of the run's authorized invoices, when its PAID
// webhook's receipt was stored (received_at, set by the insert that the 200
// answers) and when the invoice was authorized (updated_at of the document
// row, last written by the save that set status authorized), in seconds
// from the run's first receipt.
const e2eTimeline = `
SELECT extract(epoch FROM r.received_at - min(r.received_at) OVER ()),
       extract(epoch FROM d.updated_at - min(r.received_at) OVER ())
FROM invoicer.fiscal_documents d
JOIN ingest.payments p ON p.id = d.source_ref
JOIN ingest.orders o ON o.id = p.order_id
JOIN ingest.webhook_receipts r ON r.scope = 'dlocal' AND r.dedupe_key = 'payment:' || p.id || ':PAID'
WHERE d.source_kind = 'payment' AND d.kind = 'invoice' AND d.status = 'authorized'
  AND o.merchant_order_id LIKE $1`

// Timeline is when a run's payments entered and left the pipeline, in
// seconds from its first webhook.
type Timeline struct {
	Received   []float64 // each PAID webhook's receipt
	Authorized []float64 // each invoice's authorization
}

// Latencies is each payment's time from webhook to authorized invoice, in
// milliseconds, over the span from the first webhook to the last
// authorization.
func (t Timeline) Latencies() Sample {
	lat := make([]float64, len(t.Authorized))
	span := 0.0
	for i, out := range t.Authorized {
		lat[i], span = (out-t.Received[i])*1000, max(span, out)
	}
	return NewSample(time.Duration(span*float64(time.Second)), lat)
}

// timeline reads p's run's timeline.
func (p pipelineRun) timeline(ctx context.Context) (Timeline, error) {
	var t Timeline
	rows, err := p.db.Query(ctx, e2eTimeline, p.prefix+"%")
	if err != nil {
		return t, fmt.Errorf("read the burst's timeline: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var in, out float64
		if err := rows.Scan(&in, &out); err != nil {
			return t, fmt.Errorf("read the burst's timeline: %w", err)
		}
		t.Received, t.Authorized = append(t.Received, in), append(t.Authorized, out)
	}
	return t, rows.Err()
}

// binWidths are the widths, in seconds, a throughput plot's bins may take.
var binWidths = []float64{0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60}

// BinWidth is the narrowest of binWidths that cuts span seconds into at
// most 50 bins.
func BinWidth(span float64) float64 {
	for _, w := range binWidths {
		if span/w <= 50 {
			return w
		}
	}
	return binWidths[len(binWidths)-1]
}

// Rates counts the times (seconds, from 0) in bins of width seconds, up to
// the one the last falls in, as a rate: per second.
func Rates(times []float64, width float64) []float64 {
	last := 0.0
	for _, s := range times {
		last = max(last, s)
	}
	rates := make([]float64, int(math.Floor(last/width))+1)
	for _, s := range times {
		if s >= 0 {
			rates[int(math.Floor(s/width))] += 1 / width
		}
	}
	return rates
}

// plotThroughput draws the burst's webhooks received and invoices
// authorized per second over the run.
func plotThroughput(path string, t Timeline) error {
	p := plot.New()
	span := 0.0
	for _, s := range t.Authorized {
		span = max(span, s)
	}
	width := BinWidth(span)
	p.Title.Text = fmt.Sprintf("burst of %d payments: per second, in bins of %g s from the first webhook", len(t.Authorized), width)
	p.X.Label.Text = "seconds since the first webhook"
	p.Y.Label.Text = "per second"
	p.Legend.Top = true
	p.X.Min, p.Y.Min = 0, 0
	for i, series := range []struct {
		name  string
		times []float64
	}{{"webhooks received", t.Received}, {"invoices authorized", t.Authorized}} {
		rates := Rates(series.times, width)
		xys := make(plotter.XYs, 0, len(rates)+1)
		for b, r := range rates {
			xys = append(xys, plotter.XY{X: float64(b) * width, Y: r})
		}
		xys = append(xys, plotter.XY{X: float64(len(rates)) * width, Y: 0})
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("throughput plot: %w", err)
		}
		l.StepStyle = plotter.PostStep
		l.Color, l.Dashes = plotutil.Color(i), plotutil.Dashes(i)
		p.Add(l)
		p.Legend.Add(series.name, l)
	}
	return SavePNG(p, path)
}
