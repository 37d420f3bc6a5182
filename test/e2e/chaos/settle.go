package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
)

// quiesce waits until every source has a valid document, both outboxes are
// drained and no case is open, or cfg.Quiesce passes. Each round the
// operator closes what it can (cases.go): a re-issued document may be
// rejected again, a re-applied payment fail again, so it goes on in rounds.
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
	left, err := r.closeCases(ctx, docs)
	if err != nil {
		return false, "cases unreachable", err
	}
	v := Check(r.snapshot(), docs)
	pending, err := r.outboxPending(ctx)
	if err != nil {
		return false, "database unreachable", err
	}
	uncharged, err := r.chargebacksWithoutCase(ctx)
	if err != nil {
		return false, "database unreachable", err
	}
	notFinal := 0
	for _, d := range docs {
		if d.Status != statusAuthorized && d.Status != statusRejected && !d.Injected {
			notFinal++
		}
	}
	status := fmt.Sprintf("documents=%d rejected=%d missing=%d not_final=%d outbox_pending=%d chargebacks_without_case=%d cases_open=%d%s",
		v.Documents, v.Rejected, v.Missing, notFinal, pending, uncharged, len(left), kinds(left))
	return v.Missing == 0 && notFinal == 0 && pending == 0 && uncharged == 0 && len(left) == 0, status, nil
}

// kinds lists the open cases' kinds, " (kind=n …)", for the progress line.
func kinds(cases []caseJSON) string {
	if len(cases) == 0 {
		return ""
	}
	n := map[string]int{}
	for _, c := range cases {
		n[c.Kind]++
	}
	var parts []string
	for k, c := range n {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c))
	}
	sort.Strings(parts)
	return " (" + strings.Join(parts, " ") + ")"
}

// caseActions counts the cases by "kind/action" ("kind/open" while open).
func (r *run) caseActions(ctx context.Context) (map[string]int, error) {
	rows, err := r.db.Query(ctx, `SELECT kind || '/' || coalesce(action, 'open'), count(*)
		FROM (SELECT kind, action FROM ingest.cases UNION ALL SELECT kind, action FROM invoicer.cases
			UNION ALL SELECT kind, action FROM reconciler.cases) c GROUP BY 1 ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, rows.Err()
}

// caseCounts counts every service's cases, and those still open, in the
// database; refundedAtPSP counts cases closed without a document.
func (r *run) caseCounts(ctx context.Context) (total, open, refundedAtPSP int, err error) {
	err = r.db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE closed_at IS NULL),
			count(*) FILTER (WHERE action = 'refunded_at_psp')
		FROM (SELECT closed_at, action FROM ingest.cases UNION ALL SELECT closed_at, action FROM invoicer.cases
			UNION ALL SELECT closed_at, action FROM reconciler.cases) c`).Scan(&total, &open, &refundedAtPSP)
	return total, open, refundedAtPSP, err
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
	res := Result{Payments: int(r.paid.Load() + r.seconds.Load()), Refunds: int(r.refunded.Load()), Documents: v.Documents,
		Duplicates: v.Duplicates, Missing: v.Missing, ByPSP: v.ByPSP, Rejected: v.Rejected, Injected: v.Injected, Problems: v.Problems,
		Kills: int(r.kills.Load()), SQSRestarts: int(r.sqsRestarts.Load()), PGRestarts: int(r.pgRestarts.Load()),
		Elapsed: time.Since(r.start)}
	total, open, atPSP, err := r.caseCounts(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("cases: %w", err)
	}
	res.Cases, res.Closed, res.Open = total, total-open, open
	if res.ByAction, err = r.caseActions(ctx); err != nil {
		return Result{}, fmt.Errorf("cases: %w", err)
	}
	if open > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d cases still open", open))
	}
	uncharged, err := r.chargebacksWithoutCase(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("chargebacks: %w", err)
	}
	res.Chargebacks = len(r.chargebacks)
	if uncharged > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d chargebacks opened no case", uncharged))
	}
	if atPSP > 0 { // the run refunds no unmatched payment at the PSP
		res.Problems = append(res.Problems, fmt.Sprintf("%d cases closed as refunded at the PSP, which refunded none of them", atPSP))
	}
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
