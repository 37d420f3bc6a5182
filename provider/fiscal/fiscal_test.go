package fiscal

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal/vat"
)

func TestTypeFor(t *testing.T) {
	t.Parallel()
	rut := Buyer{DocType: "RUT", Country: "UY", Number: "210000000019"}
	tests := []struct {
		name  string
		buyer Buyer
		kind  Kind
		want  CFEType
	}{
		{"rut invoice", rut, KindInvoice, EFactura},
		{"rut credit note", rut, KindCreditNote, EFacturaCreditNote},
		{"rut lower case", Buyer{DocType: "rut", Number: "210000000019"}, KindInvoice, EFactura},
		{"bad rut", Buyer{DocType: "RUT", Number: "210000000018"}, KindInvoice, ETicket},
		{"bad rut credit", Buyer{DocType: "RUT", Number: "21000000001"}, KindCreditNote, ETicketCreditNote},
		{"ci", Buyer{DocType: "CI", Number: "12345672"}, KindInvoice, ETicket},
		{"ci with rut-looking number", Buyer{DocType: "CI", Number: "210000000019"}, KindInvoice, ETicket},
		{"anonymous", Buyer{}, KindInvoice, ETicket},
		{"anonymous credit", Buyer{}, KindCreditNote, ETicketCreditNote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := TypeFor(tt.buyer, tt.kind)
			if got != tt.want {
				t.Errorf("TypeFor = %d, want %d", got, tt.want)
			}
			if got.IsCreditNote() != (tt.kind == KindCreditNote) {
				t.Errorf("IsCreditNote(%d) = %v", got, got.IsCreditNote())
			}
		})
	}
}

func TestStatusFinal(t *testing.T) {
	t.Parallel()
	final := map[Status]bool{
		StatusPending: false, StatusPendingDGI: false, StatusUnknown: false,
		StatusNeedsAttention: false, StatusAuthorized: true, StatusIssued: true,
		StatusRejected: true, StatusVoided: true,
	}
	for s, want := range final {
		if s.Final() != want {
			t.Errorf("%s.Final() = %v, want %v", s, s.Final(), want)
		}
	}
}

func validDoc() Document {
	return Document{
		Reference:  Reference("payment", "D-4-abc", KindInvoice),
		Type:       ETicket,
		IssueDate:  time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		Currency:   "UYU",
		TotalMinor: 122000,
		Lines:      []Line{{Description: "Plan", Quantity: 2, UnitMinor: 61000, AmountMinor: 122000}},
		Addendum:   Addendum("payment", "D-4-abc", KindInvoice),
	}
}

func TestDocumentValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*Document)
		ok     bool
	}{
		{"valid", func(*Document) {}, true},
		{"e-Factura with RUT", func(d *Document) {
			d.Type, d.Buyer = EFactura, Buyer{DocType: "RUT", Number: "210000000019"}
		}, true},
		{"credit note", func(d *Document) {
			d.Type, d.Original = ETicketCreditNote, &OriginalRef{Type: ETicket, Series: "A", Number: 7}
		}, true},
		{"reference with leading zero", func(d *Document) { d.Reference = "0123" }, false},
		{"reference too long", func(d *Document) { d.Reference = "1234567890123456789" }, false},
		{"reference not digits", func(d *Document) { d.Reference = "12a" }, false},
		{"unknown type", func(d *Document) { d.Type = 181 }, false},
		{"no date", func(d *Document) { d.IssueDate = time.Time{} }, false},
		{"bad currency", func(d *Document) { d.Currency = "uyu" }, false},
		{"negative total", func(d *Document) { d.TotalMinor = -1 }, false},
		{"lines do not add up", func(d *Document) { d.TotalMinor = 1 }, false},
		{"line amount mismatch", func(d *Document) { d.Lines[0].UnitMinor = 1 }, false},
		{"no lines", func(d *Document) { d.Lines, d.TotalMinor = nil, 0 }, false},
		{"zero quantity", func(d *Document) { d.Lines[0].Quantity = 0 }, false},
		{"empty description", func(d *Document) { d.Lines[0].Description = " " }, false},
		{"unknown buyer doc", func(d *Document) { d.Buyer.DocType = "DNI" }, false},
		{"e-Factura without RUT", func(d *Document) { d.Type = EFactura }, false},
		{"credit note without original", func(d *Document) { d.Type = ETicketCreditNote }, false},
		{"invoice with original", func(d *Document) { d.Original = &OriginalRef{Type: ETicket} }, false},
		{"USD with exchange rate", func(d *Document) { d.Currency, d.ExchangeRate = "USD", 40123 }, true},
		{"USD without exchange rate", func(d *Document) { d.Currency = "USD" }, false},
		{"exchange rate too large", func(d *Document) { d.Currency, d.ExchangeRate = "USD", MaxExchangeRate+1 }, false},
		{"UYU with exchange rate", func(d *Document) { d.ExchangeRate = 1000 }, false},
		{"mixed VAT lines", func(d *Document) {
			d.Lines = append(d.Lines, Line{Description: "Book", Quantity: 1, UnitMinor: 500, AmountMinor: 500, VAT: vat.Exempt})
			d.TotalMinor += 500
		}, true},
		{"unknown VAT indicator", func(d *Document) { d.Lines[0].VAT = 4 }, false},
		{"e-Ticket under the UI threshold, anonymous", func(d *Document) { d.Threshold = ThresholdAtOrUnder }, true},
		{"e-Ticket above the UI threshold, anonymous", func(d *Document) { d.Threshold = ThresholdAbove }, false},
		{"e-Ticket above the UI threshold, CI", func(d *Document) {
			d.Threshold, d.Buyer = ThresholdAbove, Buyer{DocType: "CI", Number: "19119365"}
		}, true},
		{"e-Ticket above the UI threshold, passport without country", func(d *Document) {
			d.Threshold, d.Buyer = ThresholdAbove, Buyer{DocType: "PASSPORT", Number: "X123"}
		}, false},
		{"e-Ticket above the UI threshold, passport", func(d *Document) {
			d.Threshold, d.Buyer = ThresholdAbove, Buyer{DocType: "PASSPORT", Number: "X123", Country: "AR"}
		}, true},
		{"e-Ticket above the UI threshold, type without number", func(d *Document) {
			d.Threshold, d.Buyer = ThresholdAbove, Buyer{DocType: "CI"}
		}, false},
		{"e-Factura placed against the UI threshold", func(d *Document) {
			d.Type, d.Buyer, d.Threshold = EFactura, Buyer{DocType: "RUT", Number: "210000000019"}, ThresholdAbove
		}, false},
		{"not billable negative beyond the total", func(d *Document) {
			d.Lines = append(d.Lines, Line{Description: "Credit", Quantity: 1, UnitMinor: 200000, AmountMinor: 200000, VAT: vat.NotBillableNegative})
			d.TotalMinor = 0
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := validDoc()
			tt.change(&d)
			err := d.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidDocument) {
				t.Fatalf("Validate = %v, want ErrInvalidDocument", err)
			}
		})
	}
}

func TestAddendum(t *testing.T) {
	t.Parallel()
	got := Addendum("payment", "D-4-abc", KindInvoice)
	if want := "onceflow payment D-4-abc invoice"; got != want {
		t.Errorf("Addendum = %q, want %q", got, want)
	}
	if !strings.HasPrefix(Addendum("refund", "REF1", KindCreditNote), "onceflow refund REF1 credit_note") {
		t.Error("credit note addendum")
	}
}
