package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
)

// quiesce waits until every source has a final document and both outboxes
// are drained, or cfg.Quiesce passes.
func (r *run) quiesce(ctx context.Context) error {
	deadline := time.Now().Add(r.cfg.Quiesce)
	last := time.Time{}
	for {
		settled, status, err := r.settled(ctx)
		if settled {
			fmt.Fprintf(r.out, "chaos: settled: %s\n", status)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %s: %s (%v)", errSettle, r.cfg.Quiesce, status, err)
		}
		if time.Since(last) >= r.cfg.Progress {
			fmt.Fprintf(r.out, "chaos: waiting to settle: %s\n", status)
			last = time.Now()
		}
		if !backoff.Sleep(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

func (r *run) settled(ctx context.Context) (bool, string, error) {
	docs, err := r.s.Documents(ctx)
	if err != nil {
		return false, "fiscal sandbox unreachable", err
	}
	if _, err := r.resolveInjected(ctx, docs); err != nil {
		return false, "resolving injected duplicates failed", err
	}
	v := Check(r.snapshot(), docs)
	pending, err := r.outboxPending(ctx)
	if err != nil {
		return false, "database unreachable", err
	}
	notFinal := 0
	for _, d := range docs {
		if !finalStatuses[d.Status] && !d.Injected {
			notFinal++
		}
	}
	status := fmt.Sprintf("documents=%d missing=%d not_final=%d outbox_pending=%d", v.Documents, v.Missing, notFinal, pending)
	return v.Missing == 0 && notFinal == 0 && pending == 0, status, nil
}

func (r *run) outboxPending(ctx context.Context) (int, error) {
	var n int
	err := r.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM ingest.outbox WHERE published_at IS NULL)
		+ (SELECT count(*) FROM invoicer.outbox WHERE published_at IS NULL)`).Scan(&n)
	return n, err
}

// result checks the documents and the needs_attention ones against what
// the fiscal sandbox injected.
func (r *run) result(ctx context.Context) (Result, error) {
	docs, err := r.s.Documents(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("list documents: %w", err)
	}
	sources := r.snapshot()
	v := Check(sources, docs)
	res := Result{Payments: int(r.paid.Load()), Refunds: int(r.refunded.Load()), Documents: v.Documents,
		Duplicates: v.Duplicates, Missing: v.Missing, Injected: v.Injected, Problems: v.Problems,
		Kills: int(r.kills.Load()), SQSRestarts: int(r.sqsRestarts.Load()), PGRestarts: int(r.pgRestarts.Load()),
		Elapsed: time.Since(r.start)}
	injected := map[string]bool{}
	for _, d := range docs {
		if d.Injected {
			injected[d.Reference] = true
		}
	}
	rows, err := r.db.Query(ctx, "SELECT reference FROM invoicer.fiscal_documents WHERE status = 'needs_attention'")
	if err != nil {
		return Result{}, fmt.Errorf("needs_attention documents: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ref string
		if err := rows.Scan(&ref); err != nil {
			return Result{}, err
		}
		if !injected[ref] {
			res.Attention++
			res.Problems = append(res.Problems, "document "+ref+" needs attention without an injected duplicate")
		}
	}
	return res, rows.Err()
}
