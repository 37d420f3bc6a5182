package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"gonum.org/v1/gonum/stat"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/sqsclient"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// ingestRounds is how many times ingest's closed loop alternates with the
// ceiling of its receipt insert. Measured one after the other, once each,
// the ceiling moved 4,043-4,811 inserts/s and ingest 2,986-3,344 webhooks/s
// over five identical runs on one machine, and their ratio 0.66-0.76: the
// machine's speed moves within a minute (see relayRounds).
const ingestRounds = 3

// ingestClosed measures ingest's throughput beside PostgreSQL's ceiling
// under it, in ingestRounds rounds of two parts of -duration each, every
// part after its own warm-up and after the apply worker caught up with the
// part before (see settle):
//   - pg_ceiling runs ingest's receipt insert straight through pgx on as
//     many connections as the HTTP load has workers: the most receipts per
//     second PostgreSQL takes here (see dropCeiling);
//   - ingest_closed sends new signed webhooks from that many workers, each
//     waiting for its answer before the next.
//
// ingest_ratio is the median of the rounds' ingest/ceiling; the rates are
// the medians of the parts', the latencies pool every ingest part's
// requests, and the CPU table has each part's CPU summed over the rounds.
func (r *run) ingestClosed(ctx context.Context, res *Results) error {
	root, err := stack.Root()
	if err != nil {
		return err
	}
	stmt, err := ReceiptStatement(root)
	if err != nil {
		return err
	}
	insert, err := receiptOp(r.ceiling, stmt, &events{prefix: "evt_pg_" + r.tag + "_"})
	if err != nil {
		return err
	}
	deliver := webhookOp(r.client, r.webhookURL(), &events{prefix: "evt_closed_" + r.tag + "_"}, nil)
	r.progress("ingest_closed: %d rounds of the ceiling then ingest, %d workers, %s warm-up and %s measured each",
		ingestRounds, r.cfg.Concurrency, r.cfg.Warmup, r.cfg.Duration)
	var ceilings, ingests []Sample
	var ceilingCPU, ingestCPU cpuSpans
	for round := range ingestRounds {
		c, err := r.ingestPart(ctx, "pg_ceiling", insert, &ceilingCPU, func() error { return r.dropCeiling(ctx) })
		if err != nil {
			return fmt.Errorf("pg_ceiling: %w", err)
		}
		profiled := func() error { return nil }
		if round == 0 {
			profiled = r.profileStage(ctx, "ingest_closed", "ingest-1", min(r.cfg.Warmup+r.cfg.Duration, maxProfile))
		}
		s, err := r.ingestPart(ctx, "ingest_closed", deliver, &ingestCPU, profiled)
		if err != nil {
			return err
		}
		ceilings, ingests = append(ceilings, c), append(ingests, s)
		res.IngestRatioRounds = append(res.IngestRatioRounds, s.Rate()/c.Rate())
		r.progress("ingest_closed: round %d, ceiling %.0f inserts/s (p50 %.2f ms), ingest %.0f webhooks/s (p50 %.2f ms, p99 %.2f ms): %.2f",
			round+1, c.Rate(), c.Quantile(0.5), s.Rate(), s.Quantile(0.5), s.Quantile(0.99), s.Rate()/c.Rate())
	}
	s := Pool(ingests...)
	res.PGCeilingTPS, res.IngestRPS = median(rates(ceilings)), median(rates(ingests))
	res.IngestP50Ms, res.IngestP99Ms = s.Quantile(0.5), s.Quantile(0.99)
	res.IngestRatio = median(res.IngestRatioRounds)
	res.CPU["pg_ceiling"], res.CPU["ingest_closed"] = ceilingCPU.cores(), ingestCPU.cores()
	return nil
}

// ingestPart quiets the stack (see quiet), runs op in a closed loop for
// the warm-up and -duration, and adds the CPU each process used meanwhile
// to spent; done (a profile's wait, the ceiling's clean-up) runs after.
func (r *run) ingestPart(ctx context.Context, name string, op Op, spent *cpuSpans, done func() error) (Sample, error) {
	if err := r.quiet(ctx, name, true); err != nil {
		return Sample{}, err
	}
	before, began := r.readCPU(), time.Now()
	s, err := ClosedLoop(ctx, r.cfg.Concurrency, r.cfg.Warmup, r.cfg.Duration, op)
	spent.add(before, r.readCPU(), time.Since(began).Seconds())
	if err := errors.Join(err, done()); err != nil {
		return Sample{}, err
	}
	return s, nil
}

// dropCeiling deletes the ceiling's receipts once its part is over.
// They are claimed under a lease no worker holds, as ingest inserts those
// it hands its own apply worker: left there, they would wait out the
// lease and then load the next part's apply worker with tens of thousands
// of receipts, where ingest's own come one by one with its webhooks.
func (r *run) dropCeiling(ctx context.Context) error {
	if _, err := r.db.Exec(ctx, `DELETE FROM ingest.webhook_receipts WHERE lease_token = $1`, ceilingLease); err != nil {
		return fmt.Errorf("delete the ceiling's receipts: %w", err)
	}
	return nil
}

// rates are the samples' rates, in their order.
func rates(samples []Sample) []float64 {
	out := make([]float64, len(samples))
	for i, s := range samples {
		out[i] = s.Rate()
	}
	return out
}

// ingestOpen offers webhooks at a fixed rate, however fast ingest answers:
// its latency at a given load. The load runs on through cfg.OpenRepeats
// windows after one warm-up, each window's p99 taken on its own, so a
// tail that holds only sometimes shows as the share of windows within it;
// the headline figures pool the answered requests of all windows.
func (r *run) ingestOpen(ctx context.Context, res *Results) error {
	r.progress("ingest_open: %d webhooks/s offered, %s warm-up, %d windows of %s measured", r.cfg.Rate, r.cfg.Warmup, r.cfg.OpenRepeats, r.cfg.OpenWindow)
	var shed atomic.Int64
	op := webhookOp(r.client, r.webhookURL(), &events{prefix: "evt_open_" + r.tag + "_"}, &shed)
	var all, lags []Sample
	for i := range r.cfg.OpenRepeats {
		before := shed.Load()
		warmup := time.Duration(0)
		if i == 0 {
			warmup = r.cfg.Warmup
		}
		began, err := readServer(ctx, r.db)
		if err != nil {
			return err
		}
		s, lag, err := OpenLoop(ctx, r.cfg.Rate, warmup, r.cfg.OpenWindow, op)
		if err != nil {
			return err
		}
		ended, err := readServer(ctx, r.db)
		if err != nil {
			return err
		}
		res.OpenServer = append(res.OpenServer, windowServer(began, ended))
		all, lags = append(all, s), append(lags, lag)
		p99 := s.Quantile(0.99)
		if shed.Load() > before {
			p99 = math.Inf(1) // a window that shed load did not answer it at all
		}
		res.OpenP99Repeats = append(res.OpenP99Repeats, p99)
	}
	res.OpenShed = shed.Load()
	s, lag := Pool(all...), Pool(lags...)
	res.OpenAchievedRPS, res.OpenP50Ms, res.OpenLagP99Ms = s.Rate(), s.Quantile(0.5), lag.Quantile(0.99)
	res.OpenP99Ms = s.Quantile(0.99)
	r.progress("ingest_open: %.0f webhooks/s answered, %d refused busy (503); p50 %.2f ms, p99 %.2f ms, by window %s; the generator started them late by p99 %.2f ms",
		s.Rate(), res.OpenShed, s.Quantile(0.5), res.OpenP99Ms, joinMillis(res.OpenP99Repeats), lag.Quantile(0.99))
	r.progress("ingest_open: full-page images by window (*: a checkpoint was being written; in brackets, the tables autovacuum was on) %s", describeWindows(res.OpenServer))
	return nil
}

func (r *run) webhookURL() string { return r.s.IngestURL + "/webhooks/" + benchSource }

// settle waits until ingest's apply worker has no pending receipt, then
// vacuums the database, so autovacuum does not pass over the rows of the
// stage before in the middle of this one: after the relay stage it wrote
// its 300,000 published outbox rows' pages out (400 MB) and the kernel
// wrote them back 30 s later, holding the open loop's commits for 118 ms.
func (r *run) settle(ctx context.Context) error {
	if err := r.applied(ctx); err != nil {
		return err
	}
	if _, err := r.db.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}

// applied waits until ingest's apply worker has no pending receipt.
func (r *run) applied(ctx context.Context) error {
	began := time.Now()
	for {
		var pending int
		if err := r.db.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts WHERE status = 'pending'`).Scan(&pending); err != nil {
			return fmt.Errorf("count pending receipts: %w", err)
		}
		switch {
		case pending == 0:
			return nil
		case time.Since(began) > r.cfg.Timeout:
			return fmt.Errorf("%d receipts still pending after %s (-timeout)", pending, r.cfg.Timeout)
		}
		if time.Since(began) > time.Second {
			r.progress("waiting for the apply worker: %d receipts pending", pending)
		}
		if !backoff.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// pipeline pushes the payments through the whole stack (see pipelineRun),
// splits their latency by hop and counts what each document cost (see
// BurstCost) from the first payment's creation to the last authorization.
func (r *run) pipeline(ctx context.Context, res *Results) error {
	r.progress("pipeline: %d payments, webhook → authorized invoice", r.cfg.Payments)
	p := pipelineRun{s: r.s, db: r.db, prefix: "bench-" + r.tag + "-", payments: r.cfg.Payments,
		workers: r.cfg.Concurrency, timeout: r.cfg.Timeout, progress: r.progress}
	timeline, readings, err := r.measured(ctx, p, "")
	if err != nil {
		return err
	}
	res.Burst = burstCost(readings, r.cfg.Payments, topStatements)
	r.progress("pipeline: per document, %s", describeCost(res.Burst, 12))
	r.progress("pipeline: WAL per document by table:%s", describeWAL(res.Burst.WALByTable, 14))
	sample := timeline.Latencies()
	r.plots.Burst, r.plots.Timeline = sample, timeline
	res.E2EDocsPerS, res.E2EP50Ms, res.E2EP99Ms = sample.Rate(), sample.Quantile(0.5), sample.Quantile(0.99)
	r.progress("pipeline: %.1f documents/s, p50 %.0f ms, p99 %.0f ms; the PSP sandbox's notifications refused %.2f times a document",
		res.E2EDocsPerS, res.E2EP50Ms, res.E2EP99Ms, res.Burst.NotificationsRefused)
	res.E2EHops, err = r.hops(ctx, p, "pipeline")
	return err
}

// measured runs p and counts what its documents cost (see burstMeter)
// from the first payment's creation until ingest has recorded the last
// authorization. With -profiles it also takes the services' CPU profiles
// over the run's first seconds, into the directory's sub-directory sub.
func (r *run) measured(ctx context.Context, p pipelineRun, sub string) (Timeline, burstReadings, error) {
	profiled := func() error { return nil }
	dir := filepath.Join(r.cfg.Profiles, sub)
	if r.cfg.Profiles != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Timeline{}, burstReadings{}, fmt.Errorf("-profiles: %w", err)
		}
	}
	meter := &burstMeter{db: r.db, cpu: r.readCPU, refused: r.notificationsRefused}
	var readings burstReadings
	var measured error
	p.paying = func() {
		meter.start(ctx)
		if r.cfg.Profiles != "" {
			profiled = r.profile(ctx, dir)
		}
	}
	p.paid = func() { readings, measured = meter.stop(ctx) }
	timeline, err := p.run(ctx)
	return timeline, readings, errors.Join(err, profiled(), measured)
}

// hops reads and prints the latency of each hop of p's run, and the
// slowest payment's.
func (r *run) hops(ctx context.Context, p pipelineRun, stage string) ([]Hop, error) {
	hops, err := p.hops(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range hops {
		r.progress("%s: hop %-6s p50 %6.0f ms, p99 %6.0f ms", stage, h.Name, h.P50, h.P99)
	}
	slowest, err := p.slowest(ctx)
	r.progress("%s: %s", stage, slowest)
	return hops, err
}

// steady offers payments at cfg.PayRate per second for cfg.PayFor, below
// the pipeline's capacity, and measures their latency: what a payment waits
// when nothing queues in front of it.
func (r *run) steady(ctx context.Context, res *Results) error {
	n := int(float64(r.cfg.PayRate) * r.cfg.PayFor.Seconds())
	r.progress("steady: %d payments at %d/s, webhook → authorized invoice", n, r.cfg.PayRate)
	p := pipelineRun{s: r.s, db: r.db, prefix: "steady-" + r.tag + "-", payments: n, rate: r.cfg.PayRate,
		workers: r.cfg.Concurrency, timeout: r.cfg.Timeout, progress: r.progress}
	timeline, readings, err := r.measured(ctx, p, "steady")
	if err != nil {
		return err
	}
	res.SteadyCost = burstCost(readings, n, topStatements)
	sample := timeline.Latencies()
	r.plots.Steady = sample
	res.SteadyRate, res.SteadyP50Ms, res.SteadyP99Ms = r.cfg.PayRate, sample.Quantile(0.5), sample.Quantile(0.99)
	r.progress("steady: p50 %.0f ms, p99 %.0f ms at %d payments/s", res.SteadyP50Ms, res.SteadyP99Ms, res.SteadyRate)
	r.progress("steady: per document, %s", describeCost(res.SteadyCost, 12))
	res.SteadyHops, err = r.hops(ctx, p, "steady")
	return err
}

// relayRounds is how many times the relay stage measures the relay
// against raw SQS on the largest backlog: the machine's speed moves within
// a minute, so each round sends raw right before the relay drains, and the
// figures are the rounds' medians. Three rounds of one run gave ratios
// from 0.58 to 0.88; five make one bad round count less.
const relayRounds = 5

// relay stops the invoicer, then has the running relay drain each smaller
// backlog of copies of a real outbox row once, and the largest relayRounds
// times, each right after the same number of the relay's messages went to
// a queue of their own straight from Go (sendRaw), SQS's ceiling for the
// relay's way of sending at that moment. relay_ratio is the median of the
// rounds' relay/raw, relay_mps and sqs_raw_mps the medians of their rates.
func (r *run) relay(ctx context.Context, res *Results) error {
	if err := r.s.Kill("invoicer-1"); err != nil {
		return fmt.Errorf("stop the invoicer: %w", err)
	}
	m, err := sampleMessage(ctx, r.db)
	if err != nil {
		return err
	}
	largest := slices.Max(r.cfg.Backlogs)
	for _, n := range slices.Sorted(slices.Values(r.cfg.Backlogs)) {
		if n == largest {
			break
		}
		took, err := r.drain(ctx, m, n, fmt.Sprintf("%s:%d", r.tag, n), func() {})
		if err != nil {
			return err
		}
		res.BacklogSeconds[n] = took.Seconds()
	}
	name := "onceflow-bench-raw-" + r.tag
	url, err := sqsclient.EnsureQueue(ctx, r.sqs, name, 5)
	if err != nil {
		return err
	}
	r.queues = append(r.queues, name, name+"-dlq")
	billing, err := sqsclient.QueueURL(ctx, r.sqs, r.s.Queues["BILLING"])
	if err != nil {
		return err
	}
	var raws, relays, tooks, cpuRatios []float64
	for round := range relayRounds {
		r.progress("relay: round %d, %d raw messages, %d per call, %d calls in flight", round+1, largest, entriesPerCall, callsInFlight)
		stop := func() error { return nil }
		if round == 0 {
			stop = r.profileSelf("relay", "raw")
		}
		before := r.readCPU()
		raw, err := sendRaw(ctx, r.sqs, url, m, largest)
		if err := errors.Join(err, stop()); err != nil {
			return err
		}
		cpu := RelayCPU{Raw: perMessage(before, r.readCPU(), largest)}
		r.purge(ctx, url)
		profiled := func() error { return nil }
		if round == 0 {
			profiled = r.profileStage(ctx, "relay", "relay-1", 3*time.Second) // 100,000 rows drain in 5–10 s here
		}
		took, err := r.drain(ctx, m, largest, fmt.Sprintf("%s:%d:%d", r.tag, largest, round), func() { before = r.readCPU() })
		if err := errors.Join(err, profiled()); err != nil {
			return err
		}
		cpu.Relay = perMessage(before, r.readCPU(), largest)
		r.purge(ctx, billing)
		relay := float64(largest) / took.Seconds()
		raws, relays, tooks = append(raws, raw), append(relays, relay), append(tooks, took.Seconds())
		res.RelayRatioRounds = append(res.RelayRatioRounds, relay/raw)
		res.RelayCPURounds = append(res.RelayCPURounds, cpu)
		cpuRatios = append(cpuRatios, cpu.Raw["machine"]/cpu.Relay["machine"])
		r.progress("relay: round %d, raw %.0f msgs/s, relay %.0f msgs/s: %.2f", round+1, raw, relay, relay/raw)
		r.progress("relay: round %d, CPU µs a message: raw %s; relay %s", round+1, largestFirst(cpu.Raw, "%.1f"), largestFirst(cpu.Relay, "%.1f"))
	}
	res.SQSRawMPS, res.RelayMPS, res.RelayRatio = median(raws), median(relays), median(res.RelayRatioRounds)
	res.RelayCPURatio = median(cpuRatios)
	res.BacklogSeconds[largest] = median(tooks)
	return nil
}

// purge empties the queue at url between rounds, so that each round's
// sends find the emulator as the first did, not holding the messages of
// every round before (a single-threaded emulator's heap, and its pauses,
// grow with them). A refusal (AWS allows one purge a minute) only leaves
// them there.
func (r *run) purge(ctx context.Context, url string) {
	if _, err := r.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		r.progress("relay: %s not purged between rounds: %v", url, err)
	}
}

// drain has the relay publish a backlog of n copies of m and returns how
// long it took; committed is called once the backlog is committed.
func (r *run) drain(ctx context.Context, m message, n int, tag string, committed func()) (time.Duration, error) {
	r.progress("relay: draining a backlog of %d rows (%d-byte payloads)", n, len(m.payload))
	took, err := drainBacklog(ctx, r.db, m, n, tag, committed)
	if err == nil {
		r.progress("relay: %d rows in %.2fs (%.0f msgs/s)", n, took.Seconds(), float64(n)/took.Seconds())
	}
	return took, err
}

// median is the middle of xs (the lower of the two middle values when
// their number is even).
func median(xs []float64) float64 {
	return stat.Quantile(0.5, stat.Empirical, slices.Sorted(slices.Values(xs)), nil)
}

// RelayCPU is what one round of the relay stage cost the machine, in CPU
// microseconds a message by process group (see cpuSeconds; "machine" is
// every core's busy time): sending raw, and the relay draining the backlog
// from its commit to its last row's publication.
type RelayCPU struct {
	Raw   map[string]float64 `json:"raw"`
	Relay map[string]float64 `json:"relay"`
}

// perMessage is the CPU used between two readings, in microseconds for
// each of n messages, by group; groups under half a microsecond are left
// out.
func perMessage(before, after CPUTimes, n int) map[string]float64 {
	out := map[string]float64{}
	for group, s := range cpuSeconds(before, after) {
		if us := s / float64(n) * 1e6; us >= 0.5 {
			out[group] = us
		}
	}
	return out
}
