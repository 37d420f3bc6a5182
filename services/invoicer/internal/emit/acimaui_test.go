package emit_test

import (
	"strings"
	"testing"
	"time"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// identified gives ev's buyer a CI, as an e-Ticket above the UI threshold
// needs.
func identified(ev *eventsv1.BillingEvent) *eventsv1.BillingEvent {
	ev.Buyer = &eventsv1.Buyer{DocType: "CI", DocCountry: "UY", DocNumber: "19119365", LegalName: "Ana Pérez"}
	return ev
}

// Each e-Ticket tells InvoiCy where it stands against the UI threshold
// (CFEAcimaUI, at the UI's value of its date, in any currency): N under
// it, S above it with its buyer identified, and nothing on an e-Factura.
// An anonymous e-Ticket above it is never sent, since DGI requires the
// buyer: it waits for an operator.
func TestETicketsArePlacedAgainstTheUIThreshold(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	docs := map[string]store.Document{
		"N": env.Record(t, invoicertest.Payment("pay-small", 1_000_00, false)),
		"S": env.Record(t, identified(invoicertest.Payment("pay-big", 40_000_00, false))),
		"":  env.Record(t, invoicertest.Payment("pay-factura", 40_000_00, true)),
		// USD 900 at 40.123 is about UYU 29,599 excluding VAT, under 5,000 UI
		// (32,061.50); USD 1,000 is about UYU 32,888, over.
		"N (USD)": env.Record(t, usd("pay-usd-under", 900_00, false)),
		"S (USD)": env.Record(t, identified(usd("pay-usd-over", 1_000_00, false))),
	}
	anonymous := env.Record(t, invoicertest.Payment("pay-anonymous", 40_000_00, false))
	w := newWorker(t, env, fast(t), 5*time.Second)

	for want, d := range docs {
		if got := until(t, env, w, d.Reference, settled); got.Status != fiscal.StatusAuthorized {
			t.Fatalf("%s: %s, want authorized", want, got.Status)
		}
		held := heldAt(t, env.Sandbox, d.Reference)
		if flag, _, _ := strings.Cut(want, " "); held.AcimaUI != flag {
			t.Errorf("document %d minor units %s type %d sent CFEAcimaUI %q, want %q", d.AmountMinor, d.Currency, held.Type, held.AcimaUI, flag)
		}
	}
	got := until(t, env, w, anonymous.Reference, settled)
	if got.Status != fiscal.StatusNeedsAttention || !strings.Contains(deref(got.AttentionReason), "identified buyer") ||
		env.Sandbox.CountByReference(anonymous.Reference) != 0 {
		t.Fatalf("anonymous e-Ticket above the threshold: %s (%q), %d sent; want needs_attention naming the buyer, none sent",
			got.Status, deref(got.AttentionReason), env.Sandbox.CountByReference(anonymous.Reference))
	}
}

// heldAt returns the one document the sandbox holds under ref.
func heldAt(tb testing.TB, sb *fiscalsim.Server, ref string) fiscalsim.Document {
	tb.Helper()
	var out []fiscalsim.Document
	for _, d := range sb.Documents() {
		if d.Reference == ref {
			out = append(out, d)
		}
	}
	if len(out) != 1 {
		tb.Fatalf("sandbox holds %d documents under %s, want 1", len(out), ref)
	}
	return out[0]
}
