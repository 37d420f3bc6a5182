package bench

import (
	"strings"
	"testing"
	"time"
)

func TestReadmeTablesFollowTheResults(t *testing.T) {
	t.Parallel()
	r := Results{
		PGCeilingTPS: 4000, IngestRPS: 2000, IngestRatio: 0.5, IngestRatioRounds: []float64{0.45, 0.5, 0.62}, OpenRate: 1000, OpenP99Ms: 12.34,
		OpenP99Repeats: []float64{9.5, 12.34, 31.0, 11.2},
		OpenServer:     []WindowServer{{FullPages: 3}, {FullPages: 0}, {FullPages: 2400, Checkpoint: true}, {FullPages: 310, Checkpoint: true, Autovacuum: []string{"ingest.outbox", "ingest.webhook_receipts"}}},
		SQSRawMPS:      20000, RelayMPS: 17000, RelayRatio: 0.85, RelayRatioRounds: []float64{0.9, 0.85, 0.7}, E2EDocsPerS: 450, E2EPayments: 2000,
		RelayCPURatio: 0.8, RelayCPURounds: []RelayCPU{{
			Raw:   map[string]float64{"machine": 80, "bench": 45, "sqs": 30},
			Relay: map[string]float64{"machine": 100, "relay-1": 50, "sqs": 32, "postgres": 15.25},
		}},
		SteadyRate: 100, SteadyP50Ms: 21.5, SteadyP99Ms: 60,
		E2EHops:        []Hop{{Name: "1 apply", P50: 1300, P99: 1500}, {Name: "2 relay", P50: 150, P99: 400}},
		SteadyHops:     []Hop{{Name: "1 apply", P50: 2.5, P99: 13}},
		BacklogSeconds: map[int]float64{100_000: 8, 1000: 0.1},
		CPU:            map[string]map[string]float64{"relay": {"relay-1": 0.7, "sqs": 0.5}, "pg_ceiling": {"postgres": 1.25}},
		Config:         Defaults(), StartedAt: time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC), CPUs: 2,
		Burst: BurstCost{Statements: 16.75, WALBytes: 13916.4, StatementsWALBytes: 13600, WALFPI: 0.25, Plans: 0.8, PlanMs: 0.3,
			ByService:  map[string]float64{"ingest": 10.75, "invoicer": 5.3, "relay": 0.7},
			CPUSeconds: map[string]float64{"ingest-1": 0.0031, "postgres": 0.0082, "machine": 0.03},
			Top: []StatementCost{
				{Service: "ingest", Statement: "-- name: ReceiptInsert :execrows INSERT INTO ingest.webhook_receipts", Calls: 1, Plans: 0.25, Rows: 1, WALBytes: 1385},
				{Service: "relay", Statement: "commit", Calls: 0.13},
			},
			WALByTable: []TableWAL{{Table: "ingest.outbox", Bytes: 1100, Heap: 600,
				Indexes: map[string]float64{"ingest.outbox_pkey": 250, "ingest.outbox_due": 250},
				Records: map[string]float64{"Heap/INSERT": 1, "Btree/INSERT_LEAF": 5, "Heap/UPDATE": 1},
				Kinds:   map[string]float64{"Heap/INSERT": 500, "Btree/INSERT_LEAF": 500, "Heap/UPDATE": 100}}}},
		SteadyCost: BurstCost{Statements: 15.5, WALBytes: 12485, Plans: 2.5, PlanMs: 0.7, ByService: map[string]float64{"ingest": 8, "invoicer": 5.25, "relay": 2.25},
			CPUSeconds: map[string]float64{"postgres": 0.0077, "ingest-1": 0.0027}},
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := RenderReadme(&out, b); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, row := range []string{
		"Started 2026-12-01 04:00 UTC on 2 cores: 8 closed-loop workers, 15s windows, the open loop over 10 windows of 5s, a burst of 2000 payments, a steady run at 100 payments/s, settings `INVOICER_PROVIDER_RATE_LIMIT=0`.",
		"| `pg_ceiling_tps` | 4000 |",
		"| `ingest_p99_ms_at_1000rps` | 12.3 | p99 latency at that fixed rate over the answered requests of every window, ms (each window's below) |",
		"| `ingest_p99_windows_met_at_1000rps` | 0.75 |",
		"The open loop's p99 in each of its windows, in the order run: 9.5, 12.3, 31.0, 11.2 ms.",
		"(*: a checkpoint was being written; after it begins, the first change to each page logs the page whole; in brackets, the tables autovacuum was on): 3, 0, 2400*, 310* (autovacuum: ingest.outbox, ingest.webhook_receipts).",
		"| `ingest_p99_windows_met_at_1000rps` | ≥ 0.9 | 0.75 | no |",
		"| `backlog_1k_s` | 0.10 |",
		"| `backlog_100k_s` | 8.00 |",
		"| `ingest_ratio` | 0.50 |",
		"Ingest's rate over the ceiling's just before it, in each round of the ingest_closed stage: 0.45, 0.50, 0.62.",
		"| `relay_ratio` | 0.85 |",
		"The relay's rate over raw SQS's just before it, in each round of the relay stage: 0.90, 0.85, 0.70.",
		"| backlog scaling | 0.80 |",
		"| `relay_cpu_ratio` | 0.80 |",
		"| 1 | machine 80.0, bench 45.0, sqs 30.0 | machine 100.0, relay-1 50.0, sqs 32.0, postgres 15.2 |",
		"| `e2e_docs_per_s` | ≥ 800 | 450.00 | no |",
		"| `e2e_steady_p50_ms` | ≤ 250 | 21.50 | yes |",
		"| `ingest_ratio` | ≥ 0.7 | 0.50 | no |",
		"| `ingest_p99_ms_at_1000rps` | ≤ 20 | 12.34 | yes |",
		"| `relay_ratio` | ≥ 0.8 | 0.85 | yes |",
		"| 1 apply | 1300.0 | 1500.0 | 2.5 | 13.0 |",
		"| 2 relay | 150.0 | 400.0 | — | — |",
		"| pg_ceiling | postgres 1.25 |",
		"| `pg_statements_per_doc` | 16.8 |",
		"| `wal_bytes_per_doc` | 13916 |",
		"| `wal_fpi_per_doc` | 0.25 |",
		"| `pg_statements_per_doc` | ≤ 6 | 16.75 | no |",
		"| `wal_bytes_per_doc` | ≤ 8192 | 13916.40 | no |",
		"| CPU ms | postgres 8.20, ingest-1 3.10 |",
		"| statements | ingest 10.75, invoicer 5.30, relay 0.70 |",
		"| planning | 0.80 plans, 0.30 ms of PostgreSQL's CPU",
		"| ingest | `ReceiptInsert` | 1.00 | 0.25 | 1.00 | 1385 |",
		"| relay | `commit` | 0.13 | 0.00 | 0.00 | 0 |",
		"| ingest.outbox | 1100 | 600 | 500 (2) | Btree/INSERT_LEAF 500 (5.00), Heap/INSERT 500 (1.00), Heap/UPDATE 100 (1.00) |",
		"| relay | relay-1 0.70, sqs 0.50 |",
		"| steady: CPU ms | postgres 7.70, ingest-1 2.70 |",
		"| steady: statements | 15.50 (ingest 8.00, invoicer 5.25, relay 2.25), 12485 WAL bytes, 2.50 plans (0.70 ms) |",
	} {
		if !strings.Contains(page, row) {
			t.Errorf("README lacks %q", row)
		}
	}
	cpu := page[strings.Index(page, "## CPU by stage"):]
	if i, j := strings.Index(cpu, "| pg_ceiling |"), strings.Index(cpu, "| relay |"); i > j {
		t.Errorf("CPU stages out of the run's order:\n%s", page)
	}
	if i, j := strings.Index(page, "`backlog_1k_s`"), strings.Index(page, "`backlog_100k_s`"); i > j {
		t.Errorf("backlogs out of size order")
	}
}

func TestReadmeMarksMissingFigures(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := RenderReadme(&out, []byte(`{"ingest_open_rate": 500, "relay_ratio": 0.9}`)); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, row := range []string{
		"| `ingest_p99_ms_at_1000rps` | ≤ 20 | — | not measured |",
		"| `ingest_p99_ms_at_500rps` | — |",
		"| `relay_ratio` | ≥ 0.8 | 0.90 | yes |",
	} {
		if !strings.Contains(page, row) {
			t.Errorf("README lacks %q:\n%s", row, page)
		}
	}
	if err := RenderReadme(&out, []byte(`not json`)); err == nil {
		t.Error("rendered results that are not JSON")
	}
}
