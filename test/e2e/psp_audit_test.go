package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestPSPAuditRecoversAPaymentNeverRecorded pays an order whose webhook
// never reaches ingest (the PSP notifies a dead address, and the poller
// waits its default 10 minutes) and a payment for an order ingest does not
// hold. One reconciler run recovers the first through ingest's webhook
// path, which ends in exactly one authorized invoice, and reports the
// second as an audit_disagreement case; a second run recovers nothing new.
// A refund of the first, which ingest never hears of, is recovered the
// same way by the next run: one authorized credit note.
func TestPSPAuditRecoversAPaymentNeverRecorded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := startStack(ctx, t, stack.Options{PSPAudit: true, Env: []string{"RECONCILER_PSP_AUDIT_SETTLE=0s"}})

	order := createOrder(ctx, t, s, buyerOrder{prefix: "e2e-psp-audit", buyer: "Audit Buyer", amount: 45000})
	const deadWebhook = "http://127.0.0.1:9/webhooks/dlocal"
	lost, err := s.CreatePayment(ctx, order, 45000, deadWebhook)
	if err != nil {
		t.Fatal(err)
	}
	stray, err := s.CreatePayment(ctx, order+"-unknown", 1000, deadWebhook)
	if err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, s.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	auditedOnce(ctx, t, s, conn, lost, stray, "the payment of an unknown order")
	var receipts int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts WHERE source = 'audit' AND event_id = $1`, lost).Scan(&receipts)
	if err != nil || receipts != 1 {
		t.Fatalf("audit receipts of %s: %d (%v), want 1", lost, receipts, err)
	}
	if sum := runOnce(ctx, t, s); !strings.Contains(sum, " findings=1 ") {
		t.Fatalf("second run: %q, want the same one finding", sum)
	}
	err = conn.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1`, lost).Scan(&receipts)
	if err != nil || receipts != 1 {
		t.Fatalf("receipts of %s after the second run: %d (%v), want still 1", lost, receipts, err)
	}
	if err := s.WaitAuthorized(ctx, "payment:"+lost, time.Second); err != nil {
		t.Fatalf("after the second run: %v", err)
	}

	refund, err := s.RefundTo(ctx, lost, 15000, deadWebhook) // never registered with ingest either
	if err != nil {
		t.Fatal(err)
	}
	runOnce(ctx, t, s)
	if err := s.WaitAuthorized(ctx, "refund:"+refund, time.Minute); err != nil {
		t.Fatalf("the refund the audit recovered: %v", err)
	}
}

// TestPSPAuditRecoversASubscriptionExecutionNeverNotified charges a dLocal
// subscription's first execution and loses every notification of it: the
// poller cannot know it (the recurring order names no plan and no
// execution of the subscription is recorded). One reconciler run lists it
// among the period's executions and recovers it through ingest's webhook
// path, which ends in exactly one authorized invoice; an execution of a
// subscription whose external_id names no order ingest holds is an
// audit_disagreement case. A second run recovers nothing new.
func TestPSPAuditRecoversASubscriptionExecutionNeverNotified(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := startStack(ctx, t, stack.Options{PSPAudit: true, Env: []string{"RECONCILER_PSP_AUDIT_SETTLE=0s"}})

	order := createOrder(ctx, t, s, buyerOrder{prefix: "e2e-audit-subscription", buyer: "Audit Subscriber", amount: planMinor, recurring: true})
	lost := executeSilently(ctx, t, s, subscribe(ctx, t, s, createPlan(ctx, t, s), order))
	stray := executeSilently(ctx, t, s, subscribe(ctx, t, s, createPlan(ctx, t, s), order+"-unknown"))

	conn, err := pgx.Connect(ctx, s.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	auditedOnce(ctx, t, s, conn, lost, stray, "the execution of an unknown order")
	if sum := runOnce(ctx, t, s); !strings.Contains(sum, " findings=1 ") {
		t.Fatalf("second run: %q, want the same one finding", sum)
	}
	var receipts int
	err = conn.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1`, lost).Scan(&receipts)
	if err != nil || receipts != 1 {
		t.Fatalf("receipts of %s after two runs: %d (%v), want the audit's one", lost, receipts, err)
	}
	docs, err := s.Documents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if held := stack.BySource(docs)["payment:"+lost]; len(held) != 1 {
		t.Fatalf("documents of %s: %+v, want one invoice", lost, held)
	}
}

// auditedOnce runs the reconciler once, with the PSP audit, and checks its
// first findings: one finding, stray (named by what in a failure), the
// PSP's charge for an order ingest does not hold, now an open
// audit_disagreement case; and lost, the charge ingest never heard of,
// recovered into an authorized invoice.
func auditedOnce(ctx context.Context, t *testing.T, s *stack.Stack, conn *pgx.Conn, lost, stray, what string) {
	t.Helper()
	if sum := runOnce(ctx, t, s); !strings.Contains(sum, " findings=1 ") {
		t.Fatalf("first run: %q, want findings=1 (%s)", sum, what)
	}
	if err := s.WaitAuthorized(ctx, "payment:"+lost, time.Minute); err != nil {
		t.Fatal(err)
	}
	var cases int
	err := conn.QueryRow(ctx, `SELECT count(*) FROM reconciler.cases WHERE kind = 'audit_disagreement' AND closed_at IS NULL
  AND subject = $1`, "audit:psp_audit_unknown_order:dlocal:"+stray).Scan(&cases)
	if err != nil || cases != 1 {
		t.Fatalf("open audit_disagreement cases on %s: %d (%v), want 1", stray, cases, err)
	}
}
