// Command bench measures onceflow on this machine and prints a table: the
// receipt insert's ceiling through pgx beside ingest's webhook rate and
// latency (closed loop, then an open loop at a fixed rate), bare
// SendMessageBatch beside the relay draining outbox backlogs, and the whole
// pipeline from webhook to authorized document. It writes results.json and
// its plots into -out, and README.md, the figures as tables. It needs
// DATABASE_URL and AWS_ENDPOINT_URL_SQS; `make bench` sets them and runs it.
// With -readme-only it measures nothing: it rewrites -out's README.md from
// the results.json already there (`make bench-readme`).
//
//	go run ./test/e2e/cmd/bench -duration 15s -concurrency 8 -payments 500
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/onceflow/onceflow/test/e2e/bench"
)

func main() {
	opts, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if opts.readmeOnly {
		err = rewriteReadme(opts.cfg.Out)
	} else {
		err = run(ctx, opts.cfg, opts.cpuProfile)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg bench.Config, profile string) error {
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := bench.Run(ctx, cfg, os.Stdout)
	if err != nil {
		return err
	}
	fmt.Println()
	if err := res.Table(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\nbench: wrote %[1]s/results.json, %[1]s/README.md and the plots %[1]s/e2e_*.png\n", cfg.Out)
	return nil
}

// rewriteReadme renders dir/README.md from dir/results.json.
func rewriteReadme(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	if err := bench.WriteReadme(dir, b); err != nil {
		return err
	}
	fmt.Printf("bench: wrote %s/README.md from %s/results.json\n", dir, dir)
	return nil
}

// options are the command's flags: the bench's settings, and what to do
// besides measuring.
type options struct {
	cfg        bench.Config
	cpuProfile string // the harness's own CPU profile; empty: none
	readmeOnly bool   // rewrite README.md from results.json and measure nothing
}

// parse reads the flags over bench.Defaults; a bad value is refused with
// the flag's name.
func parse(args []string) (options, error) {
	cfg := bench.Defaults()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&cfg.Out, "out", cfg.Out, "directory for results.json, README.md and the plots")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "load before each timed window, not counted")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "each timed load window of the ceiling and the closed loop")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "closed-loop workers, and the ceiling's database connections")
	fs.IntVar(&cfg.Rate, "rate", cfg.Rate, "webhooks per second offered by the open loop")
	fs.IntVar(&cfg.OpenRepeats, "open-repeats", cfg.OpenRepeats, "windows the open loop is measured over, one p99 each")
	fs.DurationVar(&cfg.OpenWindow, "open-window", cfg.OpenWindow, "each open-loop window (after one warm-up)")
	fs.IntVar(&cfg.Payments, "payments", cfg.Payments, "payments pushed through the whole pipeline")
	fs.IntVar(&cfg.PayRate, "pay-rate", cfg.PayRate, "payments per second of the steady pipeline run")
	fs.DurationVar(&cfg.PayFor, "pay-for", cfg.PayFor, "how long the steady pipeline run offers payments")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "the longest the pipeline or the apply worker may take to catch up")
	backlogs := fs.String("backlogs", joinInts(cfg.Backlogs), "outbox backlog sizes the relay drains, comma-separated")
	env := fs.String("env", strings.Join(cfg.Env, ","), "extra NAME=value settings of every service, comma-separated (empty: as shipped)")
	fs.StringVar(&cfg.Profiles, "profiles", cfg.Profiles, "write CPU profiles and execution traces of ingest, relay and invoicer over the first 5 s of the burst to this directory, of the steady run to its steady/, of the relay draining the largest backlog to relay/ and of ingest under the closed loop to ingest_closed/ (go tool pprof reads them)")
	stages := fs.String("stages", "", "run only these stages, comma-separated (steady, pipeline, relay, ingest_open, ingest_closed; empty: all)")
	profile := fs.String("cpuprofile", "", "write the harness's own CPU profile (load generator included) here")
	readmeOnly := fs.Bool("readme-only", false, "measure nothing: rewrite README.md in -out from the results.json there")
	if err := fs.Parse(args); err != nil {
		return options{cfg: cfg}, err
	}
	if fs.NArg() > 0 {
		return options{cfg: cfg}, fmt.Errorf("unexpected argument %q: every setting is a flag (see -help)", fs.Arg(0))
	}
	var err error
	if cfg.Backlogs, err = splitInts(*backlogs); err != nil {
		return options{cfg: cfg}, fmt.Errorf("-backlogs: %w", err)
	}
	if *stages != "" {
		cfg.Stages = strings.Split(*stages, ",")
	}
	cfg.Env = nil
	if *env != "" {
		cfg.Env = strings.Split(*env, ",")
	}
	return options{cfg: cfg, cpuProfile: *profile, readmeOnly: *readmeOnly}, cfg.Check()
}

func splitInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
