package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/db"
)

// servicesStatements reads, from pg_stat_statements, every statement the
// services ran in this database since the last reset: each service connects
// as its own role (stack.Options.ServiceRoles), and the harness, as the
// superuser, is left out. BEGIN and COMMIT are statements too
// (pg_stat_statements.track_utility). wal_bytes and wal_fpi are the WAL the
// statement wrote itself; an autocommitted statement's commit record is not
// in them.
const servicesStatements = `
SELECT r.rolname, left(regexp_replace(s.query, '\s+', ' ', 'g'), 240),
       s.calls, s.rows, s.wal_bytes::float8, s.wal_fpi, s.total_exec_time, s.plans, s.total_plan_time
FROM pg_stat_statements s
JOIN pg_roles r ON r.oid = s.userid
WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND r.rolname = ANY($1)`

// walPosition is where the next WAL record goes: the diff of two readings is
// every byte of WAL written between them, by anyone (the services, the
// harness's own writes, autovacuum, checkpoints' full-page images).
// The text of the position is what pg_walinspect reads from; at the end the
// flushed position is taken, as pg_walinspect reads no further.
const walPosition = `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8,
    pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text`

// statementCount is one statement's totals over the burst, by service.
type statementCount struct {
	service, query           string
	calls, rows, fpi, plans  int64
	walBytes, execMs, planMs float64
}

// burstReadings are the raw counters of one burst: statements since the
// reset at its start, the WAL position at both ends and each process's CPU.
type burstReadings struct {
	statements          []statementCount
	walBefore, walAfter float64
	wal                 []walCount // between the two positions, by relation
	cpuBefore, cpuAfter CPUTimes
	// the PSP sandbox's notification attempts ingest did not accept
	refusedBefore, refusedAfter int64
}

// StatementCost is one statement of a service, per document of the burst.
type StatementCost struct {
	Service   string  `json:"service"`
	Statement string  `json:"statement"` // normalized by pg_stat_statements, whitespace folded
	Calls     float64 `json:"calls_per_doc"`
	Rows      float64 `json:"rows_per_doc"`
	WALBytes  float64 `json:"wal_bytes_per_doc"` // written by the statement itself
	WALFPI    float64 `json:"wal_fpi_per_doc"`   // full-page images among them
	ExecMs    float64 `json:"exec_ms_per_doc"`
	// Plans is how often the statement was planned: pgx prepares each
	// statement once a connection, and PostgreSQL plans it again at each
	// call while it prefers a plan for the call's values.
	Plans  float64 `json:"plans_per_doc"`
	PlanMs float64 `json:"plan_ms_per_doc"`
}

// BurstCost is what the burst cost per document: statements, WAL and CPU.
type BurstCost struct {
	Statements         float64            `json:"pg_statements_per_doc"`
	ByService          map[string]float64 `json:"pg_statements_per_doc_by_service"`
	WALBytes           float64            `json:"wal_bytes_per_doc"`
	StatementsWALBytes float64            `json:"pg_statements_wal_bytes_per_doc"` // the services' statements' own share
	WALFPI             float64            `json:"wal_fpi_per_doc"`
	Plans              float64            `json:"pg_plans_per_doc"`    // how often the statements were planned
	PlanMs             float64            `json:"pg_plan_ms_per_doc"`  // and the time it took
	CPUSeconds         map[string]float64 `json:"cpu_seconds_per_doc"` // by process group
	WALByTable         []TableWAL         `json:"wal_by_table"`        // most first
	Top                []StatementCost    `json:"pg_statements"`       // most called first
	// NotificationsRefused are the PSP sandbox's notification attempts
	// ingest did not accept (refused busy, 503, and retried later).
	NotificationsRefused float64 `json:"psp_notifications_refused_per_doc"`
}

// topStatements is how many statements results.json lists.
const topStatements = 40

// burstCost divides the burst's readings by its documents. Statements are
// listed most called first (ties: most WAL first), at most top of them.
func burstCost(r burstReadings, docs, top int) BurstCost {
	c := BurstCost{ByService: map[string]float64{}, CPUSeconds: map[string]float64{}}
	if docs <= 0 {
		return c
	}
	n := float64(docs)
	for _, s := range r.statements {
		c.Statements += float64(s.calls) / n
		c.ByService[s.service] += float64(s.calls) / n
		c.StatementsWALBytes += s.walBytes / n
		c.WALFPI += float64(s.fpi) / n
		c.Plans += float64(s.plans) / n
		c.PlanMs += s.planMs / n
		c.Top = append(c.Top, StatementCost{
			Service: s.service, Statement: s.query, Calls: float64(s.calls) / n, Rows: float64(s.rows) / n,
			WALBytes: s.walBytes / n, WALFPI: float64(s.fpi) / n, ExecMs: s.execMs / n,
			Plans: float64(s.plans) / n, PlanMs: s.planMs / n,
		})
	}
	slices.SortStableFunc(c.Top, func(a, b StatementCost) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(b.WALBytes, a.WALBytes), strings.Compare(a.Statement, b.Statement))
	})
	c.Top = c.Top[:min(top, len(c.Top))]
	c.WALBytes = (r.walAfter - r.walBefore) / n
	c.WALByTable = walByTable(r.wal, n)
	c.NotificationsRefused = float64(r.refusedAfter-r.refusedBefore) / n
	for group, s := range cpuSeconds(r.cpuBefore, r.cpuAfter) {
		c.CPUSeconds[group] = s / n
	}
	return c
}

// burstMeter takes the readings of a burst: start resets the statement
// counters and notes the WAL position, the CPU and the PSP sandbox's
// refused notifications, stop reads them again.
type burstMeter struct {
	db      *pgxpool.Pool // the stack's database, as the superuser
	cpu     func() CPUTimes
	refused func(context.Context) (int64, error) // the PSP sandbox's notification attempts not accepted so far
	r       burstReadings
	lsn     string // where the burst's WAL starts
	err     error  // start's, kept for stop
}

// services are the roles whose statements count, by the service's name.
func services() map[string]string {
	roles := map[string]string{}
	for _, schema := range db.Schemas {
		roles[db.Role(schema)] = schema
	}
	return roles
}

func (m *burstMeter) start(ctx context.Context) {
	if _, m.err = m.db.Exec(ctx, `SELECT pg_stat_statements_reset()`); m.err != nil {
		m.err = fmt.Errorf("reset pg_stat_statements: %w", m.err)
		return
	}
	if m.r.refusedBefore, m.err = m.refused(ctx); m.err != nil {
		return
	}
	m.r.cpuBefore = m.cpu()
	var flushed string
	if m.err = m.db.QueryRow(ctx, walPosition).Scan(&m.r.walBefore, &m.lsn, &flushed); m.err != nil {
		m.err = fmt.Errorf("read the WAL position: %w", m.err)
	}
}

// stop reads the counters and returns the burst's readings.
func (m *burstMeter) stop(ctx context.Context) (burstReadings, error) {
	if m.err != nil {
		return burstReadings{}, m.err
	}
	var inserted, flushed string
	if err := m.db.QueryRow(ctx, walPosition).Scan(&m.r.walAfter, &inserted, &flushed); err != nil {
		return burstReadings{}, fmt.Errorf("read the WAL position: %w", err)
	}
	var err error
	if m.r.wal, err = readWALByRelation(ctx, m.db, m.lsn, flushed); err != nil {
		return burstReadings{}, err
	}
	m.r.cpuAfter = m.cpu()
	if m.r.refusedAfter, err = m.refused(ctx); err != nil {
		return burstReadings{}, err
	}
	roles := services()
	rows, err := m.db.Query(ctx, servicesStatements, slices.Collect(maps.Keys(roles)))
	if err != nil {
		return burstReadings{}, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	m.r.statements, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (statementCount, error) {
		var s statementCount
		err := row.Scan(&s.service, &s.query, &s.calls, &s.rows, &s.walBytes, &s.fpi, &s.execMs, &s.plans, &s.planMs)
		s.service = roles[s.service]
		return s, err
	})
	if err != nil {
		return burstReadings{}, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	return m.r, nil
}

// describeCost writes the burst's cost for the progress output.
func describeCost(c BurstCost, top int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.2f statements/doc (%s), %.0f WAL bytes/doc (%.0f by the statements, %.2f full-page images), CPU ms/doc: %s",
		c.Statements, largestFirst(c.ByService, "%.2f"), c.WALBytes, c.StatementsWALBytes, c.WALFPI, cpuMsLine(c.CPUSeconds))
	for _, s := range c.Top[:min(top, len(c.Top))] {
		fmt.Fprintf(&b, "\n           %5.2f calls %5.2f plans %6.0f WAL B  %-8s %.110s", s.Calls, s.Plans, s.WALBytes, s.Service, s.Statement)
	}
	return b.String()
}

// cpuMsLine lists CPU milliseconds per document by process group, busiest
// first, the machine's total left out.
func cpuMsLine(perDoc map[string]float64) string {
	ms := map[string]float64{}
	for g, s := range perDoc {
		if g != "machine" && s*1000 >= 0.005 {
			ms[g] = s * 1000
		}
	}
	return largestFirst(ms, "%.2f")
}
