package fiscal_test

import (
	"math/big"
	"testing"

	"github.com/onceflow/onceflow/provider/fiscal"
)

func TestDailySummary(t *testing.T) {
	t.Parallel()
	// 5,000 UI at 6.4123 UYU per UI is UYU 32,061.50 exactly; at 40.000 UYU
	// per dollar that is USD 801.5375.
	s, err := fiscal.NewDailySummary(48, 5000)
	if err != nil {
		t.Fatal(err)
	}
	ui := big.NewRat(64123, 10000)
	tests := []struct {
		name  string
		polls int32
		doc   fiscal.Small
		want  bool
	}{
		{"small e-Ticket after 48 polls", 48, fiscal.Small{fiscal.ETicket, 100_00, 1000, ui}, true},
		{"at the threshold", 48, fiscal.Small{fiscal.ETicket, 3_206_150, 1000, ui}, true},
		{"a cent over", 48, fiscal.Small{fiscal.ETicket, 3_206_151, 1000, ui}, false},
		{"e-Ticket credit note", 50, fiscal.Small{fiscal.ETicketCreditNote, 100_00, 1000, ui}, true},
		{"47 polls", 47, fiscal.Small{fiscal.ETicket, 100_00, 1000, ui}, false},
		{"e-Factura", 48, fiscal.Small{fiscal.EFactura, 100_00, 1000, ui}, false},
		{"small USD e-Ticket", 48, fiscal.Small{fiscal.ETicket, 801_53, 40000, ui}, true},
		{"USD just over", 48, fiscal.Small{fiscal.ETicket, 801_54, 40000, ui}, false},
		{"no exchange rate", 48, fiscal.Small{fiscal.ETicket, 1_00, 0, ui}, false},
		{"no UI value", 48, fiscal.Small{fiscal.ETicket, 1_00, 1000, nil}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := s.Due(tt.polls, tt.doc); got != tt.want {
				t.Fatalf("Due = %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range [][2]int64{{0, 5000}, {48, 0}, {48, -1}} {
		if _, err := fiscal.NewDailySummary(int(bad[0]), bad[1]); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if (fiscal.DailySummary{}).Covers(fiscal.Small{fiscal.ETicket, 1, 1000, ui}) {
		t.Error("the zero rule covers a document")
	}
}

// Place is what CFEAcimaUI says: above the threshold or not, and unknown
// whenever the comparison cannot be made.
func TestDailySummaryPlace(t *testing.T) {
	t.Parallel()
	s, err := fiscal.NewDailySummary(48, 5000)
	if err != nil {
		t.Fatal(err)
	}
	ui := big.NewRat(64123, 10000)
	for _, tt := range []struct {
		name string
		rule fiscal.DailySummary
		doc  fiscal.Small
		want fiscal.Threshold
	}{
		{"at the threshold", s, fiscal.Small{fiscal.ETicket, 3_206_150, 1000, ui}, fiscal.ThresholdAtOrUnder},
		{"a cent over", s, fiscal.Small{fiscal.ETicket, 3_206_151, 1000, ui}, fiscal.ThresholdAbove},
		{"USD over", s, fiscal.Small{fiscal.ETicketCreditNote, 801_54, 40000, ui}, fiscal.ThresholdAbove},
		{"e-Factura", s, fiscal.Small{fiscal.EFactura, 9_999_999_99, 1000, ui}, fiscal.ThresholdUnknown},
		{"no exchange rate", s, fiscal.Small{fiscal.ETicket, 9_999_999_99, 0, ui}, fiscal.ThresholdUnknown},
		{"no UI value", s, fiscal.Small{fiscal.ETicket, 9_999_999_99, 1000, nil}, fiscal.ThresholdUnknown},
		{"zero rule", fiscal.DailySummary{}, fiscal.Small{fiscal.ETicket, 9_999_999_99, 1000, ui}, fiscal.ThresholdUnknown},
	} {
		if got := tt.rule.Place(tt.doc); got != tt.want {
			t.Errorf("%s: Place = %d, want %d", tt.name, got, tt.want)
		}
	}
}
