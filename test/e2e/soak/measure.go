package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/test/e2e/bench"
)

// windowAuthorized counts the authorized invoices of a slice of a window's
// payments (merchant order ids from $1, before $2).
const windowAuthorized = `
SELECT count(*) FROM ingest.orders o
JOIN ingest.payments p ON p.order_id = o.id
JOIN invoicer.fiscal_documents d ON d.source_kind = 'payment' AND d.source_ref = p.id AND d.kind = 'invoice'
WHERE o.merchant_order_id >= $1 AND o.merchant_order_id < $2 AND d.status = 'authorized'`

// windowLatencies is, per payment of a slice of a window, the time from its PAID
// webhook's receipt to its invoice's authorization in milliseconds, as the
// bench measures it (package bench, e2eTimeline).
const windowLatencies = `
SELECT extract(epoch FROM d.updated_at - r.received_at) * 1000, floor(extract(epoch FROM r.received_at) / 60)::bigint,
       extract(epoch FROM coalesce(r.processed_at, r.received_at) - r.received_at) * 1000,
       extract(epoch FROM d.created_at - coalesce(r.processed_at, r.received_at)) * 1000,
       extract(epoch FROM ob.published_at - coalesce(r.processed_at, r.received_at)) * 1000,
       extract(epoch FROM d.updated_at - d.created_at) * 1000
FROM ingest.orders o
JOIN ingest.payments p ON p.order_id = o.id
JOIN invoicer.fiscal_documents d ON d.source_kind = 'payment' AND d.source_ref = p.id AND d.kind = 'invoice'
JOIN ingest.webhook_receipts r ON r.scope = 'dlocal' AND r.dedupe_key = 'payment:' || p.id || ':PAID'
LEFT JOIN ingest.outbox ob ON ob.event_key = 'payment:' || p.id || ':paid'
WHERE o.merchant_order_id >= $1 AND o.merchant_order_id < $2 AND d.status = 'authorized'`

// tableSizes is every table of the services' schemas with its size on disk:
// all of it (indexes and TOAST included), its heap, its indexes, in bytes;
// and its live and dead rows as PostgreSQL's statistics count them.
const tableSizes = `
SELECT n.nspname || '.' || c.relname, pg_total_relation_size(c.oid), pg_relation_size(c.oid), pg_indexes_size(c.oid),
       coalesce(s.n_live_tup, 0), coalesce(s.n_dead_tup, 0)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.relkind IN ('r', 'p') AND n.nspname IN ('ingest', 'invoicer', 'relay', 'reconciler')`

// walPosition is the server's WAL insert position, in bytes from the
// start, and the full-page images written since the statistics' reset.
const walPosition = `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint, (SELECT wal_fpi FROM pg_stat_wal),
    pg_current_wal_flush_lsn()::text`

// reconcilerRuns are the reconciler's finished runs after run $1 of the
// sweep and the detectors, and after run $2 of the audits: each part's
// loop runs one at a time, so its runs finish in id order, while an
// audit's may outlast many sweeps. id, whether it audited, duration in
// seconds, rows checked, and whether it failed.
const reconcilerRuns = `
SELECT id, part = 'audit', extract(epoch FROM finished_at - started_at), checked, error IS NOT NULL
FROM reconciler.runs
WHERE finished_at IS NOT NULL AND CASE WHEN part = 'audit' THEN id > $2 ELSE id > $1 END
ORDER BY id`

// Size is one table's size on disk, in bytes, and its rows.
type Size struct {
	Total   int64 `json:"total"`   // heap, indexes and TOAST
	Heap    int64 `json:"heap"`    // the main fork
	Indexes int64 `json:"indexes"` // every index
	// Live and Dead are PostgreSQL's estimates (pg_stat_user_tables): a
	// pruned table's live rows stop growing as soon as the pruner acts, its
	// size once autovacuum has made the dead rows' space reusable.
	Live int64 `json:"live_rows"`
	Dead int64 `json:"dead_rows"`
}

// reading is what the soak reads at the end of a window (and once before
// the first): the CPU used so far by process, the WAL position, the table
// sizes, the reconciler's runs since the last reading.
type reading struct {
	at  time.Time
	cpu bench.CPUTimes
	// roles names each PostgreSQL client backend's role, by process id.
	roles map[int]string
	wal   int64
	// flushed is the WAL flushed so far, as pg_lsn text: where a sample of
	// the window's WAL ends.
	flushed string
	// fullPages counts the WAL's full-page images.
	fullPages int64
	tables    map[string]Size
	runs      []run
	lastID    int64 // the last run of the sweep read
	// lastAuditID is the last run of the audits read.
	lastAuditID int64
	// phases is the reconciler's phase histogram so far.
	phases map[string]phaseTotal
}

// run is one reconciler run.
type run struct {
	seconds float64
	checked int
	failed  bool
	audit   bool // a run of the audits, apart from the sweep
}

// authorized counts the authorized invoices of the orders in [from, to).
func authorized(ctx context.Context, db *pgxpool.Pool, from, to string) (int, error) {
	var n int
	if err := db.QueryRow(ctx, windowAuthorized, from, to).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the authorized invoices: %w", err)
	}
	return n, nil
}

// Hops are the legs of a payment's way, in order, whose p99 each window
// reports: apply (webhook stored → payment and outbox row written),
// deliver (→ document recorded: the relay, SQS and the invoicer's
// consumer), publish (the relay's part of deliver: → outbox row marked
// published, after SQS took it; its consumer may record the document
// first) and emit (document recorded → authorized at the provider). A
// leg whose row is gone (an outbox row pruned before it was read) is left
// out of its sample; a window recorded before a hop was has none.
var Hops = []string{"apply", "deliver", "publish", "emit"}

// windowLatency is what a window's rows tell of its latency.
type windowLatency struct {
	all      bench.Sample       // webhook accepted → invoice authorized, each payment's
	minutes  []int64            // the minutes the payments were received in (Unix minutes), in order
	byMinute []float64          // the p99 of each of those minutes
	hopP99   map[string]float64 // each hop's p99 (Hops)
}

// latencyRows gathers a window's latencies, one slice of its orders at a
// time.
type latencyRows struct {
	all     []float64
	hops    [][]float64 // by Hops
	minutes map[int64][]float64
}

// read adds the latencies of the payments of the orders in [from, to).
func (l *latencyRows) read(ctx context.Context, db *pgxpool.Pool, from, to string) error {
	if l.minutes == nil {
		l.hops, l.minutes = make([][]float64, len(Hops)), map[int64][]float64{}
	}
	rows, err := db.Query(ctx, windowLatencies, from, to)
	if err != nil {
		return fmt.Errorf("read the latencies: %w", err)
	}
	var ms float64
	var minute int64
	legs := make([]*float64, len(Hops))
	dest := []any{&ms, &minute}
	for i := range legs {
		dest = append(dest, &legs[i])
	}
	if _, err := pgx.ForEachRow(rows, dest, func() error {
		l.all = append(l.all, ms)
		l.minutes[minute] = append(l.minutes[minute], ms)
		for i, leg := range legs {
			if leg != nil {
				l.hops[i] = append(l.hops[i], *leg)
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("read the latencies: %w", err)
	}
	return nil
}

// latency is what the rows read so far tell.
func (l *latencyRows) latency() windowLatency {
	out := windowLatency{all: bench.NewSample(0, l.all), minutes: slices.Sorted(maps.Keys(l.minutes)), byMinute: byMinute(l.minutes),
		hopP99: map[string]float64{}}
	for i, name := range Hops {
		if len(l.hops[i]) > 0 {
			out.hopP99[name] = bench.NewSample(0, l.hops[i]).Quantile(0.99)
		}
	}
	return out
}

// byMinute is the p99 of each minute's latencies, the minutes in order.
func byMinute(minutes map[int64][]float64) []float64 {
	out := make([]float64, 0, len(minutes))
	for _, m := range slices.Sorted(maps.Keys(minutes)) {
		out = append(out, bench.NewSample(0, minutes[m]).Quantile(0.99))
	}
	return out
}

// read takes a reading after prev (nil for the first), with the CPU last:
// the reading's own queries count in the window they end. metrics is the
// reconciler's metrics page.
func read(ctx context.Context, db *pgxpool.Pool, metrics string, cpu func() bench.CPUTimes, prev *reading) (*reading, error) {
	r := &reading{tables: map[string]Size{}}
	if prev != nil {
		r.lastID, r.lastAuditID = prev.lastID, prev.lastAuditID
	}
	rows, err := db.Query(ctx, tableSizes)
	if err != nil {
		return nil, fmt.Errorf("read the table sizes: %w", err)
	}
	var name string
	var s Size
	if _, err := pgx.ForEachRow(rows, []any{&name, &s.Total, &s.Heap, &s.Indexes, &s.Live, &s.Dead}, func() error {
		r.tables[name] = s
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the table sizes: %w", err)
	}
	if err := r.readRuns(ctx, db); err != nil {
		return nil, err
	}
	if r.phases, err = readPhases(ctx, metrics); err != nil {
		return nil, err
	}
	if err := db.QueryRow(ctx, walPosition).Scan(&r.wal, &r.fullPages, &r.flushed); err != nil {
		return nil, fmt.Errorf("read the WAL position: %w", err)
	}
	if r.roles, err = bench.ReadPGRoles(ctx, db); err != nil {
		return nil, err
	}
	r.at, r.cpu = time.Now(), cpu()
	return r, nil
}

// readRuns reads the reconciler's runs finished since the last one read.
func (r *reading) readRuns(ctx context.Context, db *pgxpool.Pool) error {
	rows, err := db.Query(ctx, reconcilerRuns, r.lastID, r.lastAuditID)
	if err != nil {
		return fmt.Errorf("read the reconciler's runs: %w", err)
	}
	var (
		id    int64
		one   run
		check int32
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &one.audit, &one.seconds, &check, &one.failed}, func() error {
		one.checked = int(check)
		r.runs = append(r.runs, one)
		if one.audit {
			r.lastAuditID = id
		} else {
			r.lastID = id
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the reconciler's runs: %w", err)
	}
	return nil
}
