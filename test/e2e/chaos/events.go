package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// chaos runs the planned events one every KillEvery: the kills, with the
// SQS restart a third of the way through and the PostgreSQL crash two
// thirds of the way.
func (r *run) chaos(ctx context.Context) error {
	rnd := rand.New(rand.NewPCG(r.cfg.Seed, r.cfg.Seed+2))
	victims := append(append(append(r.s.Names("ingest"), r.s.Names("relay")...), r.s.Names("invoicer")...), r.s.Names("reconciler")...)
	for _, ev := range events(r.cfg) {
		if !backoff.Sleep(ctx, r.cfg.KillEvery) {
			return nil // the driver failed; its error is the run's
		}
		var err error
		switch ev {
		case "kill":
			err = r.kill(ctx, victims[rnd.IntN(len(victims))])
		case "sqs":
			err = r.restartSQS(ctx)
		case "pg":
			err = r.crashPostgres(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// events orders the run's disruptions.
func events(cfg Config) []string {
	out := make([]string, 0, cfg.Kills+2)
	for i := range cfg.Kills {
		if cfg.SQSRestarts > 0 && i == cfg.Kills/3 {
			out = append(out, "sqs")
		}
		if cfg.PGRestarts > 0 && i == 2*cfg.Kills/3 {
			out = append(out, "pg")
		}
		out = append(out, "kill")
	}
	if cfg.Kills == 0 {
		out = append(out, strings.Fields(strings.Repeat("sqs ", cfg.SQSRestarts)+strings.Repeat("pg ", cfg.PGRestarts))...)
	}
	return out
}

func (r *run) kill(ctx context.Context, name string) error {
	if err := r.s.Kill(name); err != nil {
		return err
	}
	r.kills.Add(1)
	fmt.Fprintf(r.out, "chaos: kill -9 %s\n", name)
	backoff.Sleep(ctx, 300*time.Millisecond)
	return r.s.Restart(ctx, name)
}

// restartSQS stops the emulator and starts it empty, then recreates the
// queues: every message in them is lost, as if a queue dropped them.
func (r *run) restartSQS(ctx context.Context) error {
	r.sqs.Stop()
	fmt.Fprintln(r.out, "chaos: SQS stopped; its messages are gone")
	backoff.Sleep(ctx, time.Second)
	if err := r.sqs.Start(); err != nil {
		return err
	}
	if err := stack.CreateQueues(ctx, r.sqs.Endpoint(), r.s.Queues); err != nil {
		return err
	}
	r.sqsRestarts.Add(1)
	return nil
}

// crashPostgres stops PostgreSQL as a crash would and starts it again.
func (r *run) crashPostgres(ctx context.Context) error {
	if err := r.pg.Crash(ctx); err != nil {
		return err
	}
	fmt.Fprintln(r.out, "chaos: PostgreSQL crashed")
	backoff.Sleep(ctx, 2*time.Second)
	if err := r.pg.Start(ctx); err != nil {
		return err
	}
	r.pgRestarts.Add(1)
	return nil
}
