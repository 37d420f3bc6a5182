// Command chaos runs the exactly-once proof: every service as separate
// processes (two of ingest, relay and invoicer) on a private PostgreSQL and
// SQS, payments and refunds through misbehaving sandboxes, SIGKILLs, an SQS
// restart that loses its messages and a PostgreSQL crash; then it checks
// that every payment and refund became exactly one valid document. Business
// faults (mismatched, second and charged-back payments, rejected and refused documents)
// become cases, which the harness closes through the admin API as an
// operator would. It prints one summary line and exits 1 on any duplicate
// or missing document or open case.
//
// Payments are spread over the PSPs -psps names (dLocal, Stripe, Mercado
// Pago; each sandbox with the same faults), and the documents are counted
// per payment across them.
//
//	go run ./test/e2e/cmd/chaos -payments 2000 -kills 10 -mismatch-share 0.02 -double-pay-share 0.01
//	go run ./test/e2e/cmd/chaos -psps dlocal,stripe,mercadopago -payments 3000 -kills 20
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/onceflow/onceflow/test/e2e/chaos"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

func main() {
	cfg, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := chaos.Run(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	for _, p := range res.Problems {
		fmt.Println("chaos: problem:", p)
	}
	fmt.Printf("chaos: the fiscal sandbox duplicated %d documents on purpose; each was parked and resolved by the operator\n", res.Injected)
	fmt.Printf("chaos: DGI rejected %d documents (kept, never counted as valid); the operator closed %d of %d cases\n", res.Rejected, res.Closed, res.Cases)
	fmt.Printf("chaos: %d payments were charged back at their PSP, each a chargeback case\n", res.Chargebacks)
	fmt.Println("chaos: cases by kind/action:", byAction(res.ByAction))
	fmt.Println("chaos: by PSP:", byPSP(res.ByPSP))
	fmt.Println(res)
	if !res.OK() {
		os.Exit(1)
	}
}

// parse reads the flags over the defaults; every rate has a flag.
func parse(args []string) (chaos.Config, error) {
	cfg := chaos.Defaults()
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.IntVar(&cfg.Payments, "payments", cfg.Payments, "payments to drive")
	psps := fs.String("psps", strings.Join(cfg.PSPs, ","), "PSPs to spread payments over, in turn, comma-separated: "+strings.Join(stack.PSPs, ", "))
	fs.Float64Var(&cfg.RefundShare, "refund-share", cfg.RefundShare, "share of payments refunded (0-1)")
	fs.Float64Var(&cfg.PartialShare, "partial-share", cfg.PartialShare, "share of refunds that refund half (0-1)")
	fs.Float64Var(&cfg.CompanyShare, "company-share", cfg.CompanyShare, "share of buyers with a RUT (0-1)")
	fs.Float64Var(&cfg.MismatchShare, "mismatch-share", cfg.MismatchShare, "share of payments paid at the PSP for another amount than their order's (0-1)")
	fs.Float64Var(&cfg.DoublePayShare, "double-pay-share", cfg.DoublePayShare, "share of orders that get a second PAID payment (0-1)")
	fs.Float64Var(&cfg.ChargebackShare, "chargeback-share", cfg.ChargebackShare, "share of payments charged back at their PSP once invoiced, each a chargeback case the operator acknowledges (0-1)")
	fs.Float64Var(&cfg.RefuseShare, "refuse-share", cfg.RefuseShare, "share of invoices the fiscal sandbox refuses until the operator lifts the fault (0-1)")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "payments in flight at once")
	fs.IntVar(&cfg.Kills, "kills", cfg.Kills, "SIGKILLs of a random service, each followed by a restart")
	fs.DurationVar(&cfg.KillEvery, "kill-every", cfg.KillEvery, "time between disruptions")
	fs.IntVar(&cfg.SQSRestarts, "sqs-restarts", cfg.SQSRestarts, "SQS emulator restarts, losing its messages (0 or 1)")
	fs.IntVar(&cfg.PGRestarts, "pg-restarts", cfg.PGRestarts, "PostgreSQL crashes (0 or 1)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of every random choice")
	fs.DurationVar(&cfg.Quiesce, "quiesce", cfg.Quiesce, "how long to wait for the pipeline to settle")
	fs.StringVar(&cfg.Dir, "dir", "", "keep binaries and logs here (default: a temporary directory, removed)")
	psp := fs.String("psp", strings.Join(cfg.PSPEnv, ","), "PSP sandbox faults, comma-separated NAME=value (see sandbox/cmd/psp)")
	fiscal := fs.String("fiscal", strings.Join(cfg.FiscalEnv, ","), "fiscal sandbox faults, comma-separated NAME=value (see sandbox/cmd/fiscal)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q: every setting is a flag (see -help)", fs.Arg(0))
	}
	cfg.PSPEnv, cfg.FiscalEnv, cfg.PSPs = split(*psp), split(*fiscal), split(*psps)
	if len(cfg.PSPs) == 0 {
		return cfg, fmt.Errorf("-psps: want one or more of %s", strings.Join(stack.PSPs, ", "))
	}
	for _, name := range cfg.PSPs {
		if !slices.Contains(stack.PSPs, name) {
			return cfg, fmt.Errorf("-psps: %q is none of %s", name, strings.Join(stack.PSPs, ", "))
		}
	}
	switch {
	case cfg.Payments < 1:
		return cfg, fmt.Errorf("-payments: want 1 or more")
	case cfg.Concurrency < 1:
		return cfg, fmt.Errorf("-concurrency: want 1 or more")
	case cfg.SQSRestarts < 0 || cfg.SQSRestarts > 1 || cfg.PGRestarts < 0 || cfg.PGRestarts > 1:
		return cfg, fmt.Errorf("-sqs-restarts and -pg-restarts: want 0 or 1")
	case cfg.Kills < 0 || cfg.KillEvery <= 0:
		return cfg, fmt.Errorf("-kills: want 0 or more; -kill-every: want a positive duration")
	}
	for _, share := range []float64{cfg.RefundShare, cfg.PartialShare, cfg.CompanyShare, cfg.MismatchShare, cfg.DoublePayShare, cfg.RefuseShare, cfg.ChargebackShare} {
		if share < 0 || share > 1 {
			return cfg, fmt.Errorf("-refund-share, -partial-share, -company-share, -mismatch-share, -double-pay-share, -refuse-share, -chargeback-share: want 0 to 1")
		}
	}
	for _, kv := range append(cfg.PSPEnv, cfg.FiscalEnv...) {
		if !strings.Contains(kv, "=") {
			return cfg, fmt.Errorf("-psp/-fiscal: %q is not NAME=value", kv)
		}
	}
	return cfg, nil
}

func split(s string) []string {
	var out []string
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			out = append(out, kv)
		}
	}
	return out
}

// byAction formats the case tally in a stable order.
func byAction(n map[string]int) string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, n[k])
	}
	return strings.Join(parts, " ")
}

// byPSP formats each PSP's tally in a stable order: its payments and
// refunds, their valid documents, duplicates and missing ones.
func byPSP(n map[string]chaos.Tally) string {
	parts := make([]string, 0, len(n))
	for _, k := range slices.Sorted(maps.Keys(n)) {
		t := n[k]
		parts = append(parts, fmt.Sprintf("%s sources=%d documents=%d duplicates=%d missing=%d", k, t.Sources, t.Documents, t.Duplicates, t.Missing))
	}
	return strings.Join(parts, "; ")
}
