package pspcalls

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// plain is a PSP that answers every re-fetch NotFound and lists nothing.
type plain struct{}

func (plain) Name() string { return "plain" }
func (plain) Payment(context.Context, string) (psp.Payment, error) {
	return psp.Payment{}, errkind.New(errkind.NotFound, "no such payment")
}
func (plain) Refund(context.Context, string) (psp.Refund, error) { return psp.Refund{}, nil }
func (plain) PaymentsOfOrder(context.Context, string) ([]psp.Payment, error) {
	return nil, nil
}
func (plain) PaymentsCreated(context.Context, time.Time, time.Time) ([]psp.Payment, error) {
	return nil, nil
}
func (plain) RefundsCreated(context.Context, time.Time, time.Time) ([]psp.Refund, error) {
	return nil, nil
}

// withSubscriptions is a PSP whose subscriptions charge in payments of
// their own.
type withSubscriptions struct{ plain }

func (withSubscriptions) PaymentsOfSubscriptions(_ context.Context, s psp.Subscriptions) ([]psp.Payment, error) {
	return []psp.Payment{{ID: s.OrderRef + "-next", Status: psp.StatusPaid}}, nil
}

// calls keeps the recorded calls.
type calls struct {
	mu   sync.Mutex
	seen []store.PSPFetch
}

func (c *calls) RecordPSPFetch(_ context.Context, f store.PSPFetch) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, f)
	return nil
}

// Wrapping keeps an adapter's subscription listing, recorded like the
// other calls (under the first known payment, else the order reference),
// and gives none to an adapter without one.
func TestWrapKeepsWhatTheAdapterCanDo(t *testing.T) {
	rec := &calls{}
	wrapped := Wrap(withSubscriptions{}, rec, zap.NewNop())
	subs, ok := wrapped.(subscriptionLister)
	if !ok {
		t.Fatal("the wrapped adapter lost PaymentsOfSubscriptions")
	}
	ps, err := subs.PaymentsOfSubscriptions(t.Context(), psp.Subscriptions{OrderRef: "o-1", Known: []string{"SUB-1-1"}})
	if err != nil || len(ps) != 1 || ps[0].ID != "o-1-next" {
		t.Fatalf("PaymentsOfSubscriptions = %v, %v; want the adapter's answer", ps, err)
	}
	if _, err := subs.PaymentsOfSubscriptions(t.Context(), psp.Subscriptions{OrderRef: "o-2", Plan: "7"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wrapped.Payment(t.Context(), "P-9"); !errkind.Is(err, errkind.NotFound) {
		t.Fatalf("Payment error = %v, want the adapter's NotFound", err)
	}
	want := []struct{ op, id, outcome string }{{OpPaymentsOfSubscriptions, "SUB-1-1", "found"},
		{OpPaymentsOfSubscriptions, "o-2", "found"}, {OpPayment, "P-9", "not_found"}}
	if len(rec.seen) != len(want) {
		t.Fatalf("recorded %+v, want %v", rec.seen, want)
	}
	for i, w := range want {
		if f := rec.seen[i]; f.PSP != "plain" || f.Operation != w.op || f.ObjectID != w.id || f.Outcome != w.outcome {
			t.Errorf("record %d = %+v, want %v", i, f, w)
		}
	}
	if _, ok := Wrap(plain{}, rec, zap.NewNop()).(subscriptionLister); ok {
		t.Error("an adapter without subscriptions gained PaymentsOfSubscriptions by being wrapped")
	}
}
