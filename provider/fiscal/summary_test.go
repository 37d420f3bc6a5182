package fiscal_test

import (
	"testing"

	"github.com/onceflow/onceflow/provider/fiscal"
)

func TestDailySummary(t *testing.T) {
	t.Parallel()
	// 5,000 UI at 6.4123 UYU per UI is UYU 32,061.50 exactly.
	s, err := fiscal.NewDailySummary(48, 5000, "6.4123")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		polls    int32
		typ      fiscal.CFEType
		currency string
		minor    int64
		want     bool
	}{
		{"small e-Ticket after 48 polls", 48, fiscal.ETicket, "UYU", 100_00, true},
		{"just under the threshold", 48, fiscal.ETicket, "UYU", 3_206_149, true},
		{"at the threshold", 48, fiscal.ETicket, "UYU", 3_206_150, false},
		{"e-Ticket credit note", 50, fiscal.ETicketCreditNote, "UYU", 100_00, true},
		{"47 polls", 47, fiscal.ETicket, "UYU", 100_00, false},
		{"e-Factura", 48, fiscal.EFactura, "UYU", 100_00, false},
		{"other currency", 48, fiscal.ETicket, "USD", 100_00, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := s.Due(tt.polls, tt.typ, tt.currency, tt.minor); got != tt.want {
				t.Fatalf("Due = %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"", "abc", "-1", "0"} {
		if _, err := fiscal.NewDailySummary(48, 5000, bad); err == nil {
			t.Errorf("rate %q accepted", bad)
		}
	}
	if (fiscal.DailySummary{}).Covers(fiscal.ETicket, "UYU", 1) {
		t.Error("the zero rule covers a document")
	}
}
