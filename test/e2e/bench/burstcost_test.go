package bench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestBurstCostDividesByTheDocuments(t *testing.T) {
	t.Parallel()
	r := burstReadings{
		statements: []statementCount{
			{service: "ingest", query: "begin", calls: 400},
			{service: "ingest", query: "-- name: ReceiptInsert :execrows INSERT", calls: 200, rows: 200, walBytes: 280_000, fpi: 4, execMs: 30, plans: 50, planMs: 10},
			{service: "invoicer", query: "-- name: DocumentRecord :batchone INSERT", calls: 200, rows: 200, walBytes: 260_000},
			{service: "relay", query: "UPDATE outbox", calls: 20, rows: 200, walBytes: 200_000},
		},
		walBefore: 1_000_000, walAfter: 1_000_000 + 2_000_000,
		cpuBefore: CPUTimes{{"machine", 0, false}: 10, {"ingest-1", 7, false}: 1, {"postgres", 41, false}: 2},
		cpuAfter:  CPUTimes{{"machine", 0, false}: 13, {"ingest-1", 7, false}: 1.6, {"postgres", 41, false}: 3, {"postgres", 43, false}: 0.2},
	}
	c := burstCost(r, 200, 3)
	if !near(c.Statements, 4.1) || !near(c.ByService["ingest"], 3) || !near(c.ByService["invoicer"], 1) || !near(c.ByService["relay"], 0.1) {
		t.Errorf("statements per doc %v by service %v; want 4.1: ingest 3, invoicer 1, relay 0.1", c.Statements, c.ByService)
	}
	if !near(c.WALBytes, 10_000) || !near(c.StatementsWALBytes, 3_700) || !near(c.WALFPI, 0.02) {
		t.Errorf("WAL per doc %v (statements %v, FPI %v); want 10000 (3700, 0.02)", c.WALBytes, c.StatementsWALBytes, c.WALFPI)
	}
	// Most called first; of equal calls, most WAL first; only the top 3.
	if len(c.Top) != 3 || c.Top[0].Statement != "begin" || c.Top[1].Service != "ingest" || c.Top[2].Service != "invoicer" {
		t.Fatalf("top statements %+v", c.Top)
	}
	if s := c.Top[1]; !near(s.Calls, 1) || !near(s.Rows, 1) || !near(s.WALBytes, 1400) || !near(s.WALFPI, 0.02) || !near(s.ExecMs, 0.15) ||
		!near(s.Plans, 0.25) || !near(s.PlanMs, 0.05) {
		t.Errorf("receipt insert per doc %+v", s)
	}
	want := map[string]float64{"machine": 0.015, "ingest-1": 0.003, "postgres": 0.006, "other": 0.006}
	for g, w := range want {
		if !near(c.CPUSeconds[g], w) {
			t.Errorf("CPU s/doc of %s = %v, want %v", g, c.CPUSeconds[g], w)
		}
	}
	if z := burstCost(r, 0, 3); z.Statements != 0 || len(z.Top) != 0 {
		t.Errorf("no documents: got %+v, want nothing divided", z)
	}
}

func TestResultsJSONHasTheBurstsCost(t *testing.T) {
	t.Parallel()
	r := Results{OpenRate: 1000, Config: Defaults(), Burst: BurstCost{
		Statements: 16.5, WALBytes: 13900, ByService: map[string]float64{"ingest": 10}, CPUSeconds: map[string]float64{"ingest-1": 0.003},
		Top: []StatementCost{{Service: "ingest", Statement: "begin", Calls: 1}},
	}}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"pg_statements_per_doc", "wal_bytes_per_doc", "pg_statements_wal_bytes_per_doc", "wal_fpi_per_doc",
		"cpu_seconds_per_doc", "pg_statements_per_doc_by_service", "pg_statements"} {
		if _, ok := obj[key]; !ok {
			t.Errorf("results.json lacks %q", key)
		}
	}
	if obj["pg_statements_per_doc"] != 16.5 {
		t.Errorf("pg_statements_per_doc = %v, want 16.5", obj["pg_statements_per_doc"])
	}
}

func TestStatementName(t *testing.T) {
	t.Parallel()
	for query, want := range map[string]string{
		"-- name: ReceiptInsert :execrows INSERT INTO ingest.webhook_receipts": "ReceiptInsert",
		"commit":                "commit",
		"SELECT a || b FROM t":  `SELECT a \|\| b FROM t`,
		strings.Repeat("x", 70): strings.Repeat("x", 60) + "…",
	} {
		if got := statementName(query); got != want {
			t.Errorf("statementName(%q) = %q, want %q", query, got, want)
		}
	}
}

// A run of some stages leaves the others' figures out of results.json, so
// the README reads them as not measured, not as zero.
func TestResultsJSONLeavesOutStagesNotRun(t *testing.T) {
	t.Parallel()
	cfg := Defaults()
	cfg.Stages = []string{"pipeline"}
	r := Results{OpenRate: 1000, Config: cfg, E2EDocsPerS: 90, Burst: BurstCost{Statements: 11}, PGCeilingTPS: 4000, IngestRatioRounds: []float64{0.7}}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"e2e_docs_per_s", "pg_statements_per_doc", "config"} {
		if _, ok := obj[key]; !ok {
			t.Errorf("results.json lacks %q, of a stage that ran", key)
		}
	}
	for _, key := range []string{"pg_ceiling_tps", "ingest_ratio", "ingest_ratio_by_round", "ingest_p99_ms_at_1000rps", "relay_ratio", "e2e_steady_p50_ms"} {
		if _, ok := obj[key]; ok {
			t.Errorf("results.json has %q, of a stage that did not run", key)
		}
	}
}

func TestWALByTableFoldsIndexesAndTOASTIntoTheirTable(t *testing.T) {
	t.Parallel()
	counts := []walCount{
		{relation: "invoicer.fiscal_documents", table: "invoicer.fiscal_documents", relkind: "r", record: "Heap/INSERT", records: 100, bytes: 80_000},
		{relation: "invoicer.fiscal_documents_pkey", table: "invoicer.fiscal_documents", relkind: "i", record: "Btree/INSERT_LEAF", records: 100, bytes: 7_000},
		{relation: "invoicer.fiscal_documents_status", table: "invoicer.fiscal_documents", relkind: "i", record: "Btree/INSERT_LEAF", records: 200, bytes: 15_000},
		{relation: "pg_toast.pg_toast_1", table: "invoicer.fiscal_documents", relkind: "t", record: "Heap/INSERT", records: 10, bytes: 3_000},
		{relation: "ingest.outbox", table: "ingest.outbox", relkind: "r", record: "Heap/UPDATE", records: 100, bytes: 9_000},
		{relation: "(Transaction)", record: "Transaction/COMMIT", records: 50, bytes: 2_000},
	}
	got := walByTable(counts, 100)
	if len(got) != 3 || got[0].Table != "invoicer.fiscal_documents" || got[1].Table != "ingest.outbox" || got[2].Table != "(Transaction)" {
		t.Fatalf("tables %+v; want fiscal_documents, outbox, (Transaction), most WAL first", got)
	}
	d := got[0]
	if !near(d.Bytes, 1050) || !near(d.Heap, 830) || !near(d.Indexes["invoicer.fiscal_documents_status"], 150) || len(d.Indexes) != 2 {
		t.Errorf("fiscal_documents %+v; want 1050 B a document, 830 its own and its TOAST's, 2 indexes", d)
	}
	if !near(d.Records["Heap/INSERT"], 1.1) || !near(d.Records["Btree/INSERT_LEAF"], 3) || !near(d.Kinds["Btree/INSERT_LEAF"], 220) {
		t.Errorf("records %v, bytes %v by kind", d.Records, d.Kinds)
	}
	if k := d.topKinds(1); len(k) != 1 || k[0] != "Heap/INSERT 830 (1.10)" {
		t.Errorf("top kind %q, want the inserts: 830 bytes in 1.10 records a document", k)
	}
	if walByTable(counts, 0) != nil {
		t.Error("no documents: want nothing divided")
	}
}
