// Package bench measures onceflow on this machine, stage by stage, beside
// the ceiling of the engine under each stage: ingest's webhook rate beside
// the bare receipt insert through pgx, the relay's publishing rate beside
// bare SendMessageBatch calls, and the whole pipeline from webhook to
// authorized document. It runs the real binaries through package stack
// against the PostgreSQL and SQS of DATABASE_URL and AWS_ENDPOINT_URL_SQS.
// `make bench` runs it through test/e2e/cmd/bench.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Config shapes a run.
type Config struct {
	Out         string        // where results.json, README.md and the plots go
	Warmup      time.Duration // load before each timed load window, not counted
	Duration    time.Duration // each timed load window
	Concurrency int           // workers of the closed loops, database connections of the ceiling
	Rate        int           // offered webhooks per second of the open loop
	OpenRepeats int           // how many windows the open loop is measured over, each on its own
	OpenWindow  time.Duration // each of those windows
	Payments    int           // payments pushed through the whole pipeline at once (a burst)
	PayRate     int           // payments per second of the steady pipeline run
	PayFor      time.Duration // how long the steady run offers them
	Backlogs    []int         // outbox backlog sizes the relay drains
	Timeout     time.Duration // the longest any wait may take
	Profiles    string        // where CPU profiles of the services over the burst go (the steady run's in its steady/, the relay stage's in relay/, the closed loop's in ingest_closed/); empty: none taken
	Stages      []string      // the stages to run, by name; empty: every one
	// Env adds NAME=value settings to every service and sandbox. The
	// default lifts the invoicer's client-side limit on provider calls
	// (INVOICER_PROVIDER_RATE_LIMIT, 10 a second as shipped, two calls a
	// document): kept, it caps the pipeline at 5 documents a second whatever
	// onceflow does, and the run would measure the limiter.
	Env []string
}

// Defaults fit a whole run in about five minutes on two cores.
func Defaults() Config {
	return Config{
		Out: "bench", Warmup: 3 * time.Second, Duration: 15 * time.Second, Concurrency: 8, Rate: 1000, OpenRepeats: 10, OpenWindow: 5 * time.Second,
		Payments: 2000, PayRate: 100, PayFor: 10 * time.Second, Backlogs: []int{1000, 100_000}, Timeout: 3 * time.Minute, Env: []string{"INVOICER_PROVIDER_RATE_LIMIT=0"},
	}
}

// Check says which setting is out of range, by its flag name.
func (c Config) Check() error {
	switch {
	case c.Out == "":
		return errors.New("-out: want a directory")
	case c.Warmup < 0:
		return errors.New("-warmup: want 0 or a positive duration")
	case c.Duration <= 0:
		return errors.New("-duration: want a positive duration such as 15s")
	case c.Concurrency < 1 || c.Concurrency > 512:
		return errors.New("-concurrency: want 1 to 512")
	case c.Rate < 1 || c.Rate > 100_000:
		return errors.New("-rate: want 1 to 100000 requests per second")
	case c.OpenRepeats < 1 || c.OpenRepeats > 1000:
		return errors.New("-open-repeats: want 1 to 1000 windows")
	case c.OpenWindow <= 0:
		return errors.New("-open-window: want a positive duration such as 5s")
	case c.Payments < 1:
		return errors.New("-payments: want 1 or more")
	case c.PayRate < 1 || c.PayRate > 10_000:
		return errors.New("-pay-rate: want 1 to 10000 payments per second")
	case c.PayFor <= 0:
		return errors.New("-pay-for: want a positive duration such as 10s")
	case len(c.Backlogs) == 0:
		return errors.New("-backlogs: want at least one size")
	case c.Timeout <= 0:
		return errors.New("-timeout: want a positive duration")
	}
	for _, st := range c.Stages {
		if !slices.Contains(stageNamesInOrder, st) {
			return fmt.Errorf("-stages: %q: want some of %s", st, strings.Join(stageNamesInOrder, ","))
		}
	}
	for _, kv := range c.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return fmt.Errorf("-env: %q: want NAME=value", kv)
		}
	}
	for _, n := range c.Backlogs {
		if n < 1 || n > 10_000_000 {
			return fmt.Errorf("-backlogs: %d: want sizes from 1 to 10000000", n)
		}
	}
	return nil
}

// MarshalJSON records the settings with readable durations.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"warmup": c.Warmup.String(), "duration": c.Duration.String(), "concurrency": c.Concurrency,
		"open_rate": c.Rate, "open_repeats": c.OpenRepeats, "open_window": c.OpenWindow.String(), "payments": c.Payments, "backlogs": c.Backlogs, "timeout": c.Timeout.String(), "env": c.Env, "stages": c.Stages,
	})
}

// Run starts the stack, measures every stage in turn, printing progress to
// out, writes results.json, README.md and the plots into cfg.Out, and returns
// the figures. An error means a stage could not be measured; it names the
// stage, and the processes' logs are kept.
func Run(ctx context.Context, cfg Config, out io.Writer) (Results, error) {
	if err := cfg.Check(); err != nil {
		return Results{}, err
	}
	r := &run{cfg: cfg, out: out, began: time.Now()}
	if err := r.setUp(ctx); err != nil {
		r.tearDown(false)
		return Results{}, err
	}
	res, err := r.measure(ctx)
	r.tearDown(err == nil)
	if err != nil {
		return Results{}, err
	}
	if err := Write(cfg.Out, res, r.plots); err != nil {
		return Results{}, err
	}
	return res, nil
}
