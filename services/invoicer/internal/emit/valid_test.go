package emit_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
)

// A document the emission authorizes is observed once, from the time its
// billing event says ingest accepted the payment, which the document keeps.
func TestAuthorizedDocumentIsTimedFromThePaymentsAcceptance(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	accepted := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	ev := invoicertest.Payment("pay-slo", 1220_00, false)
	ev.OccurredAt = timestamppb.New(accepted)
	d := env.Record(t, ev)
	if d.AcceptedAt == nil || !d.AcceptedAt.Equal(accepted) {
		t.Fatalf("accepted_at %v, want the event's occurred_at %v", d.AcceptedAt, accepted)
	}
	cfg := fast(t)
	authorizedAt := accepted.Add(7 * time.Minute)
	reg := prometheus.NewRegistry()
	cfg.Valid = notify.NewValid(reg, func() time.Time { return authorizedAt })
	w := newWorker(t, env, cfg, time.Second)

	d = until(t, env, w, d.Reference, settled)
	if d.Status != fiscal.StatusAuthorized {
		t.Fatalf("status %s, want authorized", d.Status)
	}
	for range 3 { // more rounds change nothing, and observe nothing more
		if _, err := w.Round(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	families, err := reg.Gather()
	if err != nil || len(families) != 1 {
		t.Fatalf("gather: %v %v", families, err)
	}
	h := families[0].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 420 {
		t.Fatalf("%d samples summing %v s, want one of 420 s", h.GetSampleCount(), h.GetSampleSum())
	}
}
