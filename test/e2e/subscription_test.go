package e2e

import (
	"context"
	"fmt"
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
	s, err := stack.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	defer dumpLogsOnFailure(t, s)

	order := fmt.Sprintf("e2e-subscription-%d", time.Now().UnixNano())
	var customer struct {
		ID string `json:"id"`
	}
	if err := s.API(ctx, s.IngestURL, "/v1/customers", map[string]any{"doc_type": "CI", "doc_country": "UY",
		"doc_number": "19119365", "legal_name": "Subscriber"}, "", &customer); err != nil {
		t.Fatal(err)
	}
	if err := s.API(ctx, s.IngestURL, "/v1/orders", map[string]any{"merchant_order_id": order, "customer_id": customer.ID,
		"amount_minor": 49000, "currency": "UYU", "recurring": true}, "", nil); err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, order, 49000, s.IngestURL+"/webhooks/dlocal")
	if err != nil {
		t.Fatal(err)
	}
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
