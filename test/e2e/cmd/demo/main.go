// Command demo runs the whole onceflow pipeline on this machine — both
// sandboxes and every service as separate processes — pushes a handful of
// demo payments (one of them refunded, one in US dollars, one with mixed VAT
// rates) through the PSP sandbox, waits until
// the fiscal sandbox holds their documents, and prints one summary line.
// `make demo` runs it after starting PostgreSQL and fauxqs. With -serve the
// pipeline keeps running afterwards, for onceflowctl and the runbook, until
// interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	payments := flag.Int("payments", 5, "demo payments to push through the PSP sandbox")
	refunds := flag.Int("refunds", 1, "how many of them are then refunded")
	timeout := flag.Duration("timeout", 2*time.Minute, "how long to wait for the documents")
	serve := flag.Bool("serve", false, "keep the pipeline running after the demo, until interrupted, and print onceflowctl's settings")
	flag.Parse()
	if err := run(ctx, *payments, *refunds, *timeout, *serve); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, payments, refunds int, timeout time.Duration, serve bool) error {
	if payments < 1 || refunds < 0 || refunds > payments {
		return fmt.Errorf("-payments must be at least 1 and -refunds between 0 and -payments")
	}
	dir, err := os.MkdirTemp("", "onceflow-demo-")
	if err != nil {
		return err
	}
	fmt.Println("demo: building and starting the sandboxes and services; logs in", dir)
	opts := stack.Options{Reconciler: serve}
	if serve {
		root, err := stack.Root()
		if err != nil {
			return err
		}
		opts.Console, opts.Env = true, []string{"CONSOLE_USERS_FILE=" + filepath.Join(root, "services", "console", "users.local")}
	}
	s, err := stack.StartWith(ctx, dir, opts)
	if err != nil {
		return err
	}
	defer s.Stop()
	sources, err := push(ctx, s, payments, refunds)
	if err != nil {
		return err
	}
	fmt.Printf("demo: %d payments and %d refunds sent; waiting for their documents\n", payments, refunds)
	_ = stack.WaitFor(ctx, timeout, func() (bool, error) {
		docs, err := s.Documents(ctx)
		return err == nil && summarize(docs, sources).settled(), err
	})
	if out, err := s.RunReconciler(ctx); err != nil {
		return fmt.Errorf("reconciler run-once: %w\n%s", err, out)
	}
	docs, err := s.Documents(ctx)
	if err != nil {
		return err
	}
	sum := summarize(docs, sources)
	fmt.Printf("demo: payments=%d refunds=%d documents=%d authorized=%d duplicates=%d missing=%d\n",
		payments, refunds, sum.documents, sum.authorized, sum.duplicates, sum.missing)
	if sum.duplicates > 0 || sum.missing > 0 {
		return fmt.Errorf("not exactly one document per payment and refund")
	}
	if serve {
		printCtlEnv(s)
		<-ctx.Done()
	}
	return nil
}

// printCtlEnv prints the settings that point onceflowctl at the running
// pipeline.
func printCtlEnv(s *stack.Stack) {
	fmt.Println("demo: the pipeline keeps running until Ctrl-C; point onceflowctl at it with:")
	fmt.Printf("export ONCEFLOW_ADMIN_TOKEN=%s ONCEFLOW_INGEST_URL=%s ONCEFLOW_RELAY_URL=%s ONCEFLOW_INVOICER_URL=%s ONCEFLOW_RECONCILER_URL=%s\n",
		stack.AdminToken, s.AdminURL("ingest-1"), s.AdminURL("relay-1"), s.AdminURL("invoicer-1"), s.AdminURL("reconciler-1"))
	fmt.Printf("export PATH=%s:$PATH\n", s.Dir)
	fmt.Printf("demo: the console is at %s (sign in as operator / local-operator, or viewer / local-viewer)\n",
		strings.Replace(s.ConsoleURL, "127.0.0.1", "localhost", 1))
}

// push pays every demo order and refunds the first refunds of them: the
// first in full, the others by half. The second order is priced and paid in
// US dollars (its CFE carries the dollar's rate) and the third mixes an
// exempt, a 10 % and a 22 % line. It returns the sources expected to end
// with one document each.
func push(ctx context.Context, s *stack.Stack, payments, refunds int) ([]string, error) {
	var sources []string
	run := time.Now().Unix()
	for i := range payments {
		amount := int64(50000 + 12345*i)
		currency, lines := "UYU", []stack.Line{{Description: "Credits pack", Quantity: 1, UnitMinor: amount}}
		switch i {
		case 1:
			amount = 4999
			currency, lines = "USD", []stack.Line{{Description: "Seat", Quantity: 1, UnitMinor: amount}}
		case 2:
			amount = 20000 + 2*5500 + amount
			lines = []stack.Line{{Description: "Book", Quantity: 1, UnitMinor: 20000, VAT: "exempt"},
				{Description: "Bread", Quantity: 2, UnitMinor: 5500, VAT: "minimum"}, lines[0]}
		}
		id, err := s.PayOrder(ctx, fmt.Sprintf("demo-%d-%d", run, i), currency, lines)
		if err != nil {
			return nil, err
		}
		sources = append(sources, "payment:"+id)
		if i >= refunds {
			continue
		}
		if i > 0 {
			amount /= 2
		}
		if err := waitPaid(ctx, s, id); err != nil {
			return nil, err
		}
		ref, err := s.Refund(ctx, id, amount)
		if err != nil {
			return nil, err
		}
		sources = append(sources, "refund:"+ref)
	}
	return sources, nil
}

// waitPaid waits until the payment's invoice exists, so the refund's
// notification finds its payment (a refund arriving first would also work,
// only later).
func waitPaid(ctx context.Context, s *stack.Stack, payment string) error {
	return stack.WaitFor(ctx, time.Minute, func() (bool, error) {
		docs, err := s.Documents(ctx)
		return len(stack.BySource(docs)["payment:"+payment]) > 0, err
	})
}

type summary struct{ documents, authorized, duplicates, missing int }

func (s summary) settled() bool { return s.missing == 0 && s.authorized == s.documents }

func summarize(docs []stack.Document, sources []string) summary {
	by := stack.BySource(docs)
	sum := summary{documents: len(docs)}
	for _, d := range docs {
		if d.Status == 5 || d.Status == 7 {
			sum.authorized++
		}
	}
	for _, src := range sources {
		switch n := len(by[src]); {
		case n == 0:
			sum.missing++
		case n > 1:
			sum.duplicates += n - 1
		}
	}
	return sum
}
