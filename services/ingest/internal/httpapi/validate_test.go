package httpapi

import (
	"math"
	"testing"

	"github.com/onceflow/onceflow/services/ingest/internal/apply"
)

// Line arithmetic that overflows int64 would wrap and could pass the
// equality checks; it is refused naming the line or "lines".
func TestValidateOrderRefusesOverflow(t *testing.T) {
	t.Parallel()
	order := func(amount int64, lines ...apply.OrderLine) Order {
		return Order{MerchantOrderID: "o-1", AmountMinor: amount, Currency: "UYU", Lines: lines}
	}
	big := int64(1)<<62 + 50 // 2 × big wraps to -2^63 + 100
	wrapped := big * 2
	for _, tc := range []struct {
		name  string
		in    Order
		field string
	}{
		{"product wraps, sum matches", order(99, apply.OrderLine{Description: "a", Quantity: 2, UnitMinor: big, AmountMinor: wrapped},
			apply.OrderLine{Description: "b", Quantity: 1, UnitMinor: math.MaxInt64, AmountMinor: math.MaxInt64}), "lines[0]"},
		{"sum wraps", order(math.MinInt64+1, apply.OrderLine{Description: "a", Quantity: 1, UnitMinor: math.MaxInt64, AmountMinor: math.MaxInt64},
			apply.OrderLine{Description: "b", Quantity: 1, UnitMinor: 2, AmountMinor: 2}), "lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if errs := validateOrder(tc.in); errs[tc.field] == "" {
				t.Fatalf("errors %v, want one for %s", errs, tc.field)
			}
		})
	}
	ok := order(30, apply.OrderLine{Description: "a", Quantity: 3, UnitMinor: 10, AmountMinor: 30})
	if errs := validateOrder(ok); len(errs) != 0 {
		t.Fatalf("valid order refused: %v", errs)
	}
}

// Lines carry their VAT indicator by name; a not_billable_negative line is
// subtracted from the order's amount and an unknown indicator is refused
// naming the line's vat field.
func TestValidateOrderVAT(t *testing.T) {
	t.Parallel()
	mixed := Order{MerchantOrderID: "o-1", AmountMinor: 150, Currency: "UYU", Lines: []apply.OrderLine{
		{Description: "book", Quantity: 1, UnitMinor: 100, AmountMinor: 100, VAT: "exempt"},
		{Description: "bread", Quantity: 1, UnitMinor: 60, AmountMinor: 60, VAT: "minimum"},
		{Description: "plan", Quantity: 1, UnitMinor: 10, AmountMinor: 10},
		{Description: "voucher", Quantity: 1, UnitMinor: 20, AmountMinor: 20, VAT: "not_billable_negative"},
	}}
	if errs := validateOrder(mixed); len(errs) != 0 {
		t.Fatalf("mixed-VAT order refused: %v", errs)
	}
	mixed.Lines[2].VAT = "luxury"
	if errs := validateOrder(mixed); errs["lines[2].vat"] == "" {
		t.Fatalf("errors %v, want one for lines[2].vat", errs)
	}
}

func TestHasEscapedNUL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`{"a":"\u0000"}`: true, `{"a":"x\\\u0000"}`: true, `{"a":"\\u0000"}`: false, `{"a":"u0000"}`: false, `{"a":"\\u0000 \u0000"}`: true, `{}`: false,
	} {
		if got := hasEscapedNUL([]byte(in)); got != want {
			t.Errorf("hasEscapedNUL(%s) = %v, want %v", in, got, want)
		}
	}
}

// A PSP plan is named only on a recurring order, with 1 to 100 characters.
func TestValidateOrderPlan(t *testing.T) {
	t.Parallel()
	plan := func(s string) *string { return &s }
	for _, tc := range []struct {
		plan      *string
		recurring bool
		refused   bool
	}{
		{nil, false, false}, {plan("4021"), true, false}, {plan("4021"), false, true},
		{plan(""), true, true}, {plan(string(make([]byte, 101))), true, true},
	} {
		in := Order{MerchantOrderID: "o-1", AmountMinor: 100, Currency: "UYU", Recurring: tc.recurring, PSPPlanID: tc.plan}
		if errs := validateOrder(in); (errs["psp_plan_id"] != "") != tc.refused || len(errs) > 1 {
			t.Errorf("plan %v on recurring=%v: errors %v, want psp_plan_id refused=%v", tc.plan, tc.recurring, errs, tc.refused)
		}
	}
}
