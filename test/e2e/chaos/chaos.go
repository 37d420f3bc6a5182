// Package chaos is the exactly-once proof: it runs every service as
// separate processes (two of ingest, relay and invoicer) against a private
// PostgreSQL and SQS, drives payments and refunds through a misbehaving PSP
// sandbox into a misbehaving fiscal sandbox, kills services with SIGKILL,
// restarts SQS (losing its messages) and crashes PostgreSQL, then checks
// that every payment and refund became exactly one document.
package chaos

import (
	"fmt"
	"time"
)

// Config is one chaos run. Zero values take the defaults of Defaults.
type Config struct {
	Payments int // payments driven through the PSP sandbox
	// PSPs are the PSPs payments are spread over, in turn (stack.PSPs
	// names them); each payment's refund and second payment go to its PSP.
	PSPs         []string
	RefundShare  float64 // share of payments refunded
	PartialShare float64 // share of refunds that refund half the payment
	CompanyShare float64 // share of buyers with a RUT (e-Factura)
	// Business faults, each closed by the harness as an operator would
	// (operator.go): MismatchShare of payments are paid at the PSP for
	// another amount than their order's, DoublePayShare of orders get a
	// second PAID payment, RefuseShare of invoices are refused by the fiscal
	// sandbox at every send until the operator lifts the fault. The fiscal
	// sandbox's FISCAL_REJECT_RATE (in FiscalEnv) has DGI reject documents.
	// ChargebackShare of invoiced payments (not refunded) are charged back
	// at their PSP: each ends in a chargeback case the operator
	// acknowledges, its invoice kept.
	MismatchShare, DoublePayShare, RefuseShare, ChargebackShare float64
	Concurrency                                                 int // payments in flight at once
	Kills                                                       int // SIGKILLs, one every KillEvery, each followed by a restart
	KillEvery                                                   time.Duration
	SQSRestarts                                                 int // restarts of the SQS emulator (0 or 1); its messages are lost
	PGRestarts                                                  int // crashes of PostgreSQL (0 or 1), each followed by recovery
	Seed                                                        uint64
	// PSPEnv and FiscalEnv are the sandboxes' fault settings, as
	// environment variables (see sandbox/cmd/psp and sandbox/cmd/fiscal).
	PSPEnv, FiscalEnv []string
	Quiesce           time.Duration // how long to wait for the pipeline to settle
	Dir               string        // binaries and logs; empty: a temporary directory
	Progress          time.Duration // progress line period
}

// Defaults is the profile `make chaos` runs without flags.
func Defaults() Config {
	return Config{
		Payments: 1000, PSPs: []string{"dlocal"}, RefundShare: 0.2, PartialShare: 0.3, CompanyShare: 0.3, Concurrency: 8,
		MismatchShare: 0.01, DoublePayShare: 0.005, RefuseShare: 0.005, ChargebackShare: 0.005,
		Kills: 12, KillEvery: 3 * time.Second, SQSRestarts: 1, PGRestarts: 1, Seed: 1,
		PSPEnv: []string{"PSP_DUPLICATE_RATE=0.2", "PSP_MAX_COPIES=3", "PSP_DELAY_MAX=500ms", "PSP_LOSS_RATE=0.02",
			"PSP_STALE_RATE=0.05", "PSP_PENDING_FIRST_RATE=0.1", "PSP_PENDING_FOR=1s", "PSP_TIME_SCALE=0.0005"},
		FiscalEnv: []string{"FISCAL_LATENCY_MAX=30ms", "FISCAL_FAIL_RATE=0.05", "FISCAL_HANG_RATE=0.03", "FISCAL_HANG_FOR=4s",
			"FISCAL_DUPLICATE_RATE=0.01", "FISCAL_PENDING_RATE=0.1", "FISCAL_PENDING_POLLS_MAX=3",
			"FISCAL_REJECT_RATE=0.02"},
		Quiesce: 5 * time.Minute, Progress: 5 * time.Second,
	}
}

// Result is what a run found.
type Result struct {
	Payments, Refunds, Documents int // Payments counts second payments too
	Chargebacks                  int // payments charged back at their PSP, each a chargeback case
	Duplicates, Missing          int
	Rejected                     int              // documents DGI rejected: kept, never valid
	Cases, Closed, Open          int              // cases of every service, at the end
	ByAction                     map[string]int   // cases by "kind/action" ("kind/open" while open)
	Injected                     int              // duplicates the fiscal sandbox made on purpose
	Attention                    int              // needs_attention documents not explained by an injected duplicate
	ByPSP                        map[string]Tally // payments and refunds, their documents, duplicates and missing, per PSP
	Kills, SQSRestarts           int
	PGRestarts                   int
	Elapsed                      time.Duration
	Problems                     []string
}

// OK reports whether every payment and refund became exactly one valid
// document and every case was closed.
func (r Result) OK() bool {
	return r.Duplicates == 0 && r.Missing == 0 && r.Attention == 0 && r.Open == 0 && len(r.Problems) == 0
}

// String is the run's one summary line.
func (r Result) String() string {
	return fmt.Sprintf("chaos: payments=%d refunds=%d documents=%d duplicates=%d missing=%d cases=%d closed=%d open=%d kills=%d sqs_restarts=%d pg_restarts=%d elapsed=%s",
		r.Payments, r.Refunds, r.Documents, r.Duplicates, r.Missing, r.Cases, r.Closed, r.Open,
		r.Kills, r.SQSRestarts, r.PGRestarts, r.Elapsed.Round(time.Second))
}
