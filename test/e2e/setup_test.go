package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// planMinor is the amount, in minor units of UYU, of every plan createPlan
// makes: 490.00 a month.
const planMinor = 49000

// TestMain builds the binaries once for every stack the tests start.
func TestMain(m *testing.M) { os.Exit(stack.ShareBuild(m.Run)) }

// startStack starts the whole stack with o in a directory of the test's
// own and, when the test ends, logs every process's log if it failed, then
// stops the stack (and drops its database).
func startStack(ctx context.Context, t *testing.T, o stack.Options) *stack.Stack {
	t.Helper()
	s, err := stack.StartWith(ctx, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop) // cleanups run last first: the logs, then Stop
	t.Cleanup(func() { dumpLogsOnFailure(t, s) })
	return s
}

// dumpLogsOnFailure logs every process's log of s if the test failed.
func dumpLogsOnFailure(t *testing.T, s *stack.Stack) {
	if !t.Failed() {
		return
	}
	for _, name := range s.Names("") {
		if b, err := os.ReadFile(s.Dir + "/" + name + ".log"); err == nil {
			t.Logf("--- %s.log ---\n%s", name, b)
		}
	}
}

// buyerOrder is what createOrder makes at ingest: a buyer identified by a
// CI and one order of theirs in UYU.
type buyerOrder struct {
	prefix    string // of the merchant order id; a unique suffix follows it
	buyer     string // the buyer's legal name
	amount    int64  // the order's amount in minor units
	recurring bool   // the order holds the buyer for a subscription
	plan      int64  // the dLocal plan the recurring order names; 0 for none
	answer    any    // if not nil, decodes ingest's answer to the order
}

// createOrder creates o's buyer and then its order at ingest, and returns
// the order's merchant order id.
func createOrder(ctx context.Context, t *testing.T, s *stack.Stack, o buyerOrder) string {
	t.Helper()
	order := fmt.Sprintf("%s-%d", o.prefix, time.Now().UnixNano())
	var customer struct {
		ID string `json:"id"`
	}
	if err := s.API(ctx, s.IngestURL, "/v1/customers", map[string]any{"doc_type": "CI", "doc_country": "UY",
		"doc_number": "19119365", "legal_name": o.buyer}, "", &customer); err != nil {
		t.Fatal(err)
	}
	req := map[string]any{"merchant_order_id": order, "customer_id": customer.ID, "amount_minor": o.amount, "currency": "UYU"}
	if o.recurring {
		req["recurring"] = true
	}
	if o.plan != 0 {
		req["psp_plan_id"] = strconv.FormatInt(o.plan, 10)
	}
	if err := s.API(ctx, s.IngestURL, "/v1/orders", req, "", o.answer); err != nil {
		t.Fatal(err)
	}
	return order
}

// createPlan creates a monthly dLocal plan of planMinor UYU at the
// sandbox, notified at ingest, and returns its id.
func createPlan(ctx context.Context, t *testing.T, s *stack.Stack) int64 {
	t.Helper()
	plan, err := s.CreatePlan(ctx, planMinor, s.IngestURL+"/webhooks/dlocal")
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// subscribe subscribes the buyer of order to plan at the sandbox.
func subscribe(ctx context.Context, t *testing.T, s *stack.Stack, plan int64, order string) stack.Subscription {
	t.Helper()
	sub, err := s.SubscribeTo(ctx, plan, order)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// executeSilently charges sub's next period at the sandbox with every
// notification of it lost, and returns the payment id ingest records the
// execution under.
func executeSilently(ctx context.Context, t *testing.T, s *stack.Stack, sub stack.Subscription) string {
	t.Helper()
	id, err := s.ExecuteSilently(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	return stack.ExecutionPaymentID(sub, id)
}
