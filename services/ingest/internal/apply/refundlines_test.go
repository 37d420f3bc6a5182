package apply

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

func TestRefundLinesShareByVAT(t *testing.T) {
	t.Parallel()
	lines, _ := json.Marshal([]OrderLine{
		{Description: "book", Quantity: 1, UnitMinor: 50000, AmountMinor: 50000, VAT: "exempt"},
		{Description: "bread", Quantity: 2, UnitMinor: 5500, AmountMinor: 11000, VAT: "minimum"},
		{Description: "plan", Quantity: 1, UnitMinor: 39000, AmountMinor: 39000},
	})
	got := refundLines("Refund", 10001, lines)
	if len(got) != 3 || got[0].Vat != "exempt" || got[1].Vat != "minimum" || got[2].Vat != "basic" {
		t.Fatalf("lines %v", got)
	}
	// 10001 × 50/100/11 %/39 %: 5000.5, 1100.11, 3900.39 → the largest
	// remainder (exempt) takes the leftover cent.
	if got[0].AmountMinor != 5001 || got[1].AmountMinor != 1100 || got[2].AmountMinor != 3900 {
		t.Fatalf("shares %d %d %d", got[0].AmountMinor, got[1].AmountMinor, got[2].AmountMinor)
	}
	one := refundLines("Refund", 700, nil)
	if len(one) != 1 || one[0].AmountMinor != 700 || one[0].Vat != "" {
		t.Fatalf("order without lines: %v", one)
	}
}

// TestRefundLinesAddUp: for random orders and refunds the credit note's
// lines add up to the refund exactly and each stays within its share ±1.
func TestRefundLinesAddUp(t *testing.T) {
	t.Parallel()
	names := []string{"", "exempt", "minimum", "basic", "export", "suspended"}
	rapid.Check(t, func(t *rapid.T) {
		var ol []OrderLine
		var total int64
		for range rapid.IntRange(1, 10).Draw(t, "n") {
			a := rapid.Int64Range(1, 10_000_000).Draw(t, "amount")
			ol = append(ol, OrderLine{Description: "x", Quantity: 1, UnitMinor: a, AmountMinor: a, VAT: rapid.SampledFrom(names).Draw(t, "vat")})
			total += a
		}
		refund := rapid.Int64Range(1, total).Draw(t, "refund")
		raw, _ := json.Marshal(ol)
		var sum int64
		for _, l := range refundLines("Refund", refund, raw) {
			if l.AmountMinor <= 0 || l.AmountMinor != l.UnitMinor*l.Quantity {
				t.Fatalf("line %v", l)
			}
			sum += l.AmountMinor
		}
		if sum != refund {
			t.Fatalf("lines add up to %d, refund is %d", sum, refund)
		}
	})
}
