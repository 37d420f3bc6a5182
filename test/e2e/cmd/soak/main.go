// Command soak runs the whole onceflow pipeline at a steady rate for many
// documents, retention and pruning shortened so they act during the run,
// and prints a line per window of documents: CPU per document by process,
// WAL per document, table and index sizes, the reconciler's run times, the
// end-to-end p50 and p99. It ends with the verdict, the last window against
// the first, and writes results.json, the plots and README.md into -out.
// It needs PostgreSQL's binaries (for its private cluster; -pg shared uses
// DATABASE_URL's server instead) and AWS_ENDPOINT_URL_SQS, which `make soak`
// sets. It exits 1 when the run fails or the verdict is not flat. With
// -readme-only it runs nothing: it judges the run in -out's results.json
// again by the current method and rewrites it, its plots and README.md
// (`make soak-readme`).
//
//	go run ./test/e2e/cmd/soak -documents 6000 -window 2000 -rate 50 -retention 20s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/onceflow/onceflow/test/e2e/soak"
)

func main() {
	cfg, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if cfg.readmeOnly {
		res, err := soak.Rejudge(cfg.Out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		fmt.Println(res.Verdict)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	res, err := soak.Run(ctx, cfg.Config, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	fmt.Printf("soak: wrote %[1]s/results.json, %[1]s/%[2]s and %[1]s/README.md\n", cfg.Out, strings.Join(soak.Plots, ", "+cfg.Out+"/"))
	if !res.Verdict.OK {
		os.Exit(1)
	}
}

// options are the run's settings and whether to run at all.
type options struct {
	soak.Config
	// readmeOnly judges the run recorded in Out again and rewrites its
	// README.md and plots, without running.
	readmeOnly bool
}

// parse reads the flags over soak.Defaults; a bad value is refused with
// the flag's name.
func parse(args []string) (options, error) {
	cfg := options{Config: soak.Defaults()}
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.BoolVar(&cfg.readmeOnly, "readme-only", false, "judge the run in -out/results.json again by the current method and rewrite it, its plots and README.md, without running")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "directory for results.json, the plots and README.md")
	fs.IntVar(&cfg.Documents, "documents", cfg.Documents, "payments offered, one invoice each; a multiple of -window")
	fs.IntVar(&cfg.Window, "window", cfg.Window, "documents per measured window")
	fs.IntVar(&cfg.Rate, "rate", cfg.Rate, "payments offered per second")
	fs.DurationVar(&cfg.Retention, "retention", cfg.Retention, "retention of every pruned table (the services' floors still apply); 0: two windows at -rate")
	fs.DurationVar(&cfg.ReconcileEvery, "reconcile-every", cfg.ReconcileEvery, "the reconciler's interval; 0: a quarter window at -rate, at most 1m")
	fs.StringVar(&cfg.PG, "pg", cfg.PG, "PostgreSQL: private (a cluster of the run's own, autovacuum on) or shared (DATABASE_URL's server)")
	fs.Float64Var(&cfg.Tolerance, "tolerance", cfg.Tolerance, "how much worse the last window may be than the first (0.15 is 15 %)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "the longest a window's invoices may take once its last payment was offered")
	pgSettings := fs.String("pg-settings", strings.Join(cfg.PGSettings, ","), "with -pg private, the cluster's server settings, name=value, comma-separated (empty: PostgreSQL's defaults)")
	env := fs.String("env", strings.Join(cfg.Env, ","), "extra NAME=value settings of every process, comma-separated, after the soak's own (empty: none)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q: every setting is a flag (see -help)", fs.Arg(0))
	}
	cfg.Env, cfg.PGSettings = nil, nil
	if *pgSettings != "" {
		cfg.PGSettings = strings.Split(*pgSettings, ",")
	}
	if *env != "" {
		cfg.Env = strings.Split(*env, ",")
	}
	return cfg, cfg.Check()
}
