package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestOnePaymentOneDocument drives one payment from the PSP sandbox through
// every service and checks the fiscal sandbox holds exactly one authorized
// invoice for it, even after the same notification arrives three more times.
func TestOnePaymentOneDocument(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := startStack(ctx, t, stack.Options{})

	payment, err := s.Pay(ctx, fmt.Sprintf("e2e-%d", time.Now().UnixNano()), 122000)
	if err != nil {
		t.Fatal(err)
	}
	source := "payment:" + payment
	if err := s.WaitAuthorized(ctx, source, time.Minute); err != nil {
		t.Fatal(err)
	}

	if err := s.Renotify(ctx, payment, 3); err != nil {
		t.Fatal(err)
	}
	out, err := s.RunReconciler(ctx)
	if err != nil {
		t.Fatalf("reconciler run-once: %v\n%s", err, out)
	}
	if !strings.Contains(out, "missing=0") || !strings.Contains(out, "republished=0") {
		t.Fatalf("the reconciler's sweep found work on a healthy pipeline: %s", out)
	}
	// Give redeliveries every chance to do harm before counting.
	time.Sleep(3 * time.Second)
	docs, err := s.Documents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if held := stack.BySource(docs)[source]; len(held) != 1 || held[0].Type != 101 {
		t.Fatalf("after 3 redeliveries the fiscal sandbox holds %+v for %s, want exactly one e-Ticket (101)", held, source)
	}
	if len(docs) != 1 {
		t.Fatalf("fiscal sandbox holds %d documents, want 1: %+v", len(docs), docs)
	}
}
