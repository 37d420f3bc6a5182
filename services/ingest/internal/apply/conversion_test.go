package apply

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// A USD order charged in UYU matches when the PSP reports what it converted
// from, compared with the order like with like; without the conversion, or
// with another amount, it does not.
func TestChargedCurrencyMatchesThroughTheConversion(t *testing.T) {
	t.Parallel()
	o := store.Order{AmountMinor: 49_99, Currency: "USD"}
	for _, tc := range []struct {
		name string
		p    psp.Payment
		want string
	}{
		{"same currency", psp.Payment{AmountMinor: 49_99, Currency: "USD"}, ""},
		{"converted", psp.Payment{AmountMinor: 2_005_75, Currency: "UYU", Conversion: &psp.Conversion{AmountMinor: 49_99, Currency: "USD"}}, ""},
		{"converted from another amount", psp.Payment{AmountMinor: 2_005_75, Currency: "UYU", Conversion: &psp.Conversion{AmountMinor: 50_00, Currency: "USD"}}, ReasonAmountMismatch},
		{"converted from another currency", psp.Payment{AmountMinor: 2_005_75, Currency: "UYU", Conversion: &psp.Conversion{AmountMinor: 49_99, Currency: "EUR"}}, ReasonCurrencyMismatch},
		{"no conversion reported", psp.Payment{AmountMinor: 2_005_75, Currency: "UYU"}, ReasonCurrencyMismatch},
	} {
		if got := mismatch(tc.p, o); got != tc.want {
			t.Errorf("%s: mismatch %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The invoice of a converted payment is in the charged currency, its lines
// converted with their VAT indicators and adding up to the charged amount.
func TestConvertedPaymentIsInvoicedInTheChargedCurrency(t *testing.T) {
	t.Parallel()
	lines, _ := json.Marshal([]OrderLine{
		{Description: "Book", Quantity: 1, UnitMinor: 10_00, AmountMinor: 10_00, VAT: "exempt"},
		{Description: "Seat", Quantity: 3, UnitMinor: 13_33, AmountMinor: 39_99},
	})
	o := store.Order{MerchantOrderID: "o-usd", AmountMinor: 49_99, Currency: "USD", Lines: lines}
	p := psp.Payment{ID: "pay-uyu", Status: StatusPaid, AmountMinor: 2_005_75, Currency: "UYU",
		Conversion: &psp.Conversion{AmountMinor: 49_99, Currency: "USD"}}
	msg, err := invoiceEvent(p, o, store.Customer{})
	if err != nil {
		t.Fatal(err)
	}
	var ev eventsv1.BillingEvent
	if err := proto.Unmarshal(msg.Payload, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Currency != "UYU" || ev.AmountMinor != 2_005_75 || len(ev.Lines) != 2 {
		t.Fatalf("event %s %d with %d lines, want UYU 2005.75 with 2", ev.Currency, ev.AmountMinor, len(ev.Lines))
	}
	// 10/49.99 of 2005.75 is 401.23; the rest, 1604.52, is the seats'.
	if l := ev.Lines[0]; l.Vat != "exempt" || l.AmountMinor != 401_23 || ev.Lines[1].AmountMinor != 1_604_52 || ev.Lines[1].Vat != "" {
		t.Fatalf("lines %v", ev.Lines)
	}
}

// TestConvertLinesAddUp: random lines and charged amounts convert to lines
// that add up to the charged amount exactly, each unit × quantity = amount.
func TestConvertLinesAddUp(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var lines []OrderLine
		for range rapid.IntRange(1, 8).Draw(t, "n") {
			a := rapid.Int64Range(1, 1_000_000).Draw(t, "amount")
			lines = append(lines, OrderLine{Description: "x", Quantity: 1, UnitMinor: a, AmountMinor: a,
				VAT: rapid.SampledFrom([]string{"", "exempt", "minimum"}).Draw(t, "vat")})
		}
		charged := rapid.Int64Range(1, 100_000_000).Draw(t, "charged")
		var sum int64
		for i, l := range convertLines(lines, charged) {
			if l.Quantity*l.UnitMinor != l.AmountMinor || l.AmountMinor < 0 || l.VAT != lines[i].VAT {
				t.Fatalf("line %+v from %+v", l, lines[i])
			}
			sum += l.AmountMinor
		}
		if sum != charged {
			t.Fatalf("lines add up to %d, charged %d", sum, charged)
		}
	})
}
