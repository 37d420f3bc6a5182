package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestSubscriptionExecutionsAreOneInvoiceEach runs a dLocal subscription
// through the whole stack (real PostgreSQL and SQS, the PSP and fiscal
// sandboxes): a recurring order holds the buyer, the buyer subscribes to a
// plan, and each of three executions is notified, re-fetched and ends in
// its own authorized invoice. A duplicated and late notification of an
// execution is a duplicate receipt and adds no document; cancelling the
// subscription stops further executions and undoes nothing already paid.
func TestSubscriptionExecutionsAreOneInvoiceEach(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // the binaries are built first
	defer cancel()
	s := startStack(ctx, t, stack.Options{})

	order := createOrder(ctx, t, s, buyerOrder{prefix: "e2e-subscription", buyer: "Subscriber", amount: planMinor, recurring: true})
	sub := subscribe(ctx, t, s, createPlan(ctx, t, s), order)
	var executions []string
	for range 3 {
		id, err := s.Execute(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		executions = append(executions, id)
		if err := s.WaitAuthorized(ctx, "payment:"+stack.ExecutionPaymentID(sub, id), time.Minute); err != nil {
			t.Fatalf("execution %s: %v", id, err)
		}
	}

	if err := s.RenotifyExecution(ctx, sub, executions[0], 3); err != nil { // duplicated and late
		t.Fatal(err)
	}
	if err := s.CancelSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Execute(ctx, sub); err == nil {
		t.Fatal("a cancelled subscription was charged again")
	}
	if err := s.RenotifyExecution(ctx, sub, executions[1], 1); err != nil { // late, after the cancellation
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, s.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, id := range executions[:2] {
		var receipts int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1`, stack.ExecutionPaymentID(sub, id)).Scan(&receipts)
		if err != nil || receipts != 1 {
			t.Fatalf("receipts of execution %s after its notification came again: %d (%v), want 1", id, receipts, err)
		}
	}
	docs, err := s.Documents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []stack.Document
	for source, held := range stack.BySource(docs) {
		if strings.Contains(source, fmt.Sprintf("SUB-%d-", sub.ID)) {
			mine = append(mine, held...)
		}
	}
	if len(mine) != 3 {
		t.Fatalf("documents of the subscription: %+v, want 3 invoices, one per execution", mine)
	}
	for _, id := range executions {
		if err := s.WaitAuthorized(ctx, "payment:"+stack.ExecutionPaymentID(sub, id), time.Second); err != nil {
			t.Fatalf("execution %s after the cancellation: %v", id, err)
		}
	}
}

// TestSubscriptionFirstExecutionNeverNotifiedIsFoundByItsPlan names the
// dLocal plan on a recurring order, then charges the buyer's first period
// with every notification of it lost: no execution names the subscription
// yet, and the poller finds it among the plan's subscriptions by the
// order's reference. One authorized invoice, one receipt however often the
// order is polled again; another order's subscription to the same plan is
// left alone.
func TestSubscriptionFirstExecutionNeverNotifiedIsFoundByItsPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startStack(ctx, t, stack.Options{Env: []string{"INGEST_POLL_AFTER=0s", "INGEST_POLL_EVERY=1s", "INGEST_POLL_EVERY_MAX=1s", "INGEST_POLL_INTERVAL=1s"}})

	plan := createPlan(ctx, t, s)
	var created struct {
		PSPPlanID string `json:"psp_plan_id"`
	}
	order := createOrder(ctx, t, s, buyerOrder{prefix: "e2e-plan-subscription", buyer: "Subscriber", amount: planMinor,
		recurring: true, plan: plan, answer: &created})
	if created.PSPPlanID != strconv.FormatInt(plan, 10) {
		t.Fatalf("order created with psp_plan_id %q, want %d", created.PSPPlanID, plan)
	}
	other := executeSilently(ctx, t, s, subscribe(ctx, t, s, plan, order+"-neighbour"))
	id := executeSilently(ctx, t, s, subscribe(ctx, t, s, plan, order))
	if err := s.WaitAuthorized(ctx, "payment:"+id, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, s.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var polls int
	if err := conn.QueryRow(ctx, `SELECT polls FROM ingest.orders WHERE merchant_order_id = $1`, order).Scan(&polls); err != nil {
		t.Fatal(err)
	}
	err = stack.WaitFor(ctx, time.Minute, func() (bool, error) { // the rounds after the one that found it have run
		var now int
		err := conn.QueryRow(ctx, `SELECT polls FROM ingest.orders WHERE merchant_order_id = $1`, order).Scan(&now)
		return now >= polls+2, err
	})
	if err != nil {
		t.Fatal(err)
	}
	for execution, want := range map[string]int{id: 1, other: 0} {
		var receipts int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = $1`, execution).Scan(&receipts)
		if err != nil || receipts != want {
			t.Fatalf("receipts of execution %s: %d (%v), want %d", execution, receipts, err, want)
		}
	}
	if err := s.WaitAuthorized(ctx, "payment:"+id, time.Second); err != nil {
		t.Fatalf("after more polls: %v", err)
	}
}
