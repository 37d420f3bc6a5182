package invoicy

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
)

var update = flag.Bool("update", false, "rewrite the golden CFE files in testdata")

var rutBuyer = fiscal.Buyer{DocType: "RUT", Number: "210000000019", Name: "Acme SA", Address: "Av. 18 de Julio 1234",
	City: "Montevideo", Department: "Montevideo"}

// mixedTicket is an e-Ticket in UYU with an exempt, a 10 % and a 22 % line.
func mixedTicket() fiscal.Document {
	return fiscal.Document{
		Reference: fiscal.Reference("payment", "P-MIXED", fiscal.KindInvoice), Type: fiscal.ETicket,
		IssueDate: day(2026, 12, 1), Currency: "UYU", TotalMinor: 50000 + 2*5500 + 122050,
		Lines: []fiscal.Line{
			{Description: "Book", Quantity: 1, UnitMinor: 50000, AmountMinor: 50000, VAT: vat.Exempt},
			{Description: "Bread", Quantity: 2, UnitMinor: 5500, AmountMinor: 11000, VAT: vat.Minimum},
			{Description: "Plan", Quantity: 1, UnitMinor: 122050, AmountMinor: 122050, VAT: vat.Basic},
		},
		Addendum:  fiscal.Addendum("payment", "P-MIXED", fiscal.KindInvoice),
		Threshold: fiscal.ThresholdAtOrUnder,
	}
}

// ciBuyer is a person identified by a CI, as an e-Ticket above the UI
// threshold needs.
var ciBuyer = fiscal.Buyer{DocType: "CI", Country: "UY", Number: "19119365", Name: "Ana Pérez", Address: "Rambla 1",
	City: "Montevideo", Department: "Montevideo"}

// bigTicket is an e-Ticket in UYU above the UI threshold (40,000.00 at
// 22 %: 32,786.89 excluding VAT, over 5,000 UI at 6.4123), to a buyer
// identified by a CI.
func bigTicket() fiscal.Document {
	return fiscal.Document{
		Reference: fiscal.Reference("payment", "P-BIG", fiscal.KindInvoice), Type: fiscal.ETicket,
		IssueDate: day(2026, 12, 1), Currency: "UYU", TotalMinor: 4_000_000, Buyer: ciBuyer,
		Lines:     []fiscal.Line{{Description: "Laptop", Quantity: 1, UnitMinor: 4_000_000, AmountMinor: 4_000_000, VAT: vat.Basic}},
		Addendum:  fiscal.Addendum("payment", "P-BIG", fiscal.KindInvoice),
		Threshold: fiscal.ThresholdAbove,
	}
}

// usdFactura is an e-Factura in USD at 40.123 UYU per dollar.
func usdFactura() fiscal.Document {
	return fiscal.Document{
		Reference: fiscal.Reference("payment", "P-USD", fiscal.KindInvoice), Type: fiscal.EFactura,
		IssueDate: day(2026, 12, 1), Currency: "USD", ExchangeRate: 40123, TotalMinor: 2 * 4999, Buyer: rutBuyer,
		Lines:    []fiscal.Line{{Description: "Seat", Quantity: 2, UnitMinor: 4999, AmountMinor: 9998, VAT: vat.Basic}},
		Addendum: fiscal.Addendum("payment", "P-USD", fiscal.KindInvoice),
	}
}

// usdCreditNote credits part of usdFactura, issued as A-1.
func usdCreditNote() fiscal.Document {
	return fiscal.Document{
		Reference: fiscal.Reference("refund", "R-USD", fiscal.KindCreditNote), Type: fiscal.EFacturaCreditNote,
		IssueDate: day(2026, 12, 2), Currency: "USD", ExchangeRate: 40250, TotalMinor: 4999, Buyer: rutBuyer,
		Lines:    []fiscal.Line{{Description: "Refund of order 17", Quantity: 1, UnitMinor: 4999, AmountMinor: 4999, VAT: vat.Basic}},
		Original: &fiscal.OriginalRef{Type: fiscal.EFactura, Series: "A", Number: 1, Date: day(2026, 12, 1)},
		Addendum: fiscal.Addendum("refund", "R-USD", fiscal.KindCreditNote),
	}
}

// TestGoldenCFE renders each document's <CFE> element, compares it with
// its golden file, has the sandbox's validator check the golden file and
// reads it back.
func TestGoldenCFE(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]fiscal.Document{
		"eticket_uyu_mixed_vat": mixedTicket(), "efactura_usd": usdFactura(), "credit_note_usd_partial": usdCreditNote(),
		"eticket_above_ui": bigTicket(),
	} {
		if err := doc.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		el, err := cfeElement(doc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := xml.MarshalIndent(el, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name+".xml")
		if *update {
			if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(append(got, '\n'), want) {
			t.Errorf("%s: CFE differs from %s (go test -run TestGoldenCFE -update rewrites it)\n%s", name, path, got)
		}
		checked, err := fiscalsim.ValidateCFE(want)
		if err != nil {
			t.Fatalf("%s: the sandbox's validator refuses the golden file: %v", name, err)
		}
		readBack(t, name, doc, checked[0])
	}
}

// readBack compares what the validator read from a golden file with doc.
func readBack(t *testing.T, name string, doc fiscal.Document, c fiscalsim.Checked) {
	t.Helper()
	tot, _ := doc.Totals()
	if c.Type != int(doc.Type) || c.Currency != doc.Currency || c.PayMinor != doc.TotalMinor || c.LineCount != len(doc.Lines) {
		t.Errorf("%s: read back %+v", name, c)
	}
	for i, l := range c.Lines {
		if l.IndFact != int(doc.Lines[i].Indicator()) || l.AmountMinor != doc.Lines[i].AmountMinor {
			t.Errorf("%s: line %d read back as %+v", name, i+1, l)
		}
	}
	want := map[string]int64{"MntNoGrv": tot.NonTaxed, "MntNetoIvaTasaMin": tot.NetMinimum, "MntIVATasaMin": tot.VATMinimum,
		"MntNetoIVATasaBasica": tot.NetBasic, "MntIVATasaBasica": tot.VATBasic, "MntTotal": tot.Total}
	for field, v := range want {
		if c.Totals[field] != v {
			t.Errorf("%s: Tot%s read back %d, want %d", name, field, c.Totals[field], v)
		}
	}
	if c.AcimaUI != map[fiscal.Threshold]string{fiscal.ThresholdAbove: "S", fiscal.ThresholdAtOrUnder: "N"}[doc.Threshold] {
		t.Errorf("%s: CFEAcimaUI read back %q for threshold %d", name, c.AcimaUI, doc.Threshold)
	}
	if doc.ExchangeRate != 0 && c.ExchangeRate != fiscal.FormatExchangeRate(doc.ExchangeRate) {
		t.Errorf("%s: TpoCambio read back %q", name, c.ExchangeRate)
	}
	if o := doc.Original; o != nil && (len(c.Refs) != 1 || c.Refs[0].Type != int(o.Type) || c.Refs[0].Number != int(o.Number)) {
		t.Errorf("%s: references read back %+v", name, c.Refs)
	}
}

// TestValidatorRefusesBadCFE breaks one thing at a time in the golden files
// and expects the sandbox's validator to refuse each.
func TestValidatorRefusesBadCFE(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name+".xml"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ticket, factura, note, big := read("eticket_uyu_mixed_vat"), read("efactura_usd"), read("credit_note_usd_partial"), read("eticket_above_ui")
	for _, c := range []struct{ name, doc, old, new string }{
		{"total off by a cent", ticket, "<TotMntTotal>1830.50", "<TotMntTotal>1830.51"},
		{"amount to pay off", ticket, "<TotMntPagar>1830.50", "<TotMntPagar>1830.49"},
		{"basic net off by a cent", ticket, "<TotMntNetoIVATasaBasica>1000.41", "<TotMntNetoIVATasaBasica>1000.40"},
		{"VAT not adding up", ticket, "<TotMntIVATasaBasica>220.09", "<TotMntIVATasaBasica>220.10"},
		{"exempt total missing", ticket, "<TotMntNoGrv>500.00</TotMntNoGrv>", ""},
		{"line count", ticket, "<TotCantLinDet>3", "<TotCantLinDet>2"},
		{"rate other than DGI's", ticket, "<TotIVATasaMin>10", "<TotIVATasaMin>11"},
		{"line indicator changed", ticket, "<IteIndFact>1</IteIndFact>", "<IteIndFact>3</IteIndFact>"},
		{"quantity times price", ticket, "<ItePrecioUnitario>55.00", "<ItePrecioUnitario>55.01"},
		{"TpoCambio in UYU", ticket, "<TotTpoMoneda>UYU</TotTpoMoneda>", "<TotTpoMoneda>UYU</TotTpoMoneda><TotTpoCambio>1.000</TotTpoCambio>"},
		{"TpoCambio missing", factura, "<TotTpoCambio>40.123</TotTpoCambio>", ""},
		{"TpoCambio with 4 decimals", factura, "<TotTpoCambio>40.123", "<TotTpoCambio>40.1234"},
		{"RUT check digit", factura, "210000000019", "210000000018"},
		{"e-Factura to a CI", factura, "<RcpTipoDocRecep>2", "<RcpTipoDocRecep>3"},
		{"above the UI threshold without a buyer", ticket, "<CFEAcimaUI>N", "<CFEAcimaUI>S"},
		{"above the UI threshold, buyer without a number", big, "<RcpDocRecep>19119365</RcpDocRecep>", ""},
		{"above the UI threshold, passport without country", big,
			"<RcpTipoDocRecep>3</RcpTipoDocRecep>\n      <RcpCodPaisRecep>UY</RcpCodPaisRecep>", "<RcpTipoDocRecep>5</RcpTipoDocRecep>"},
		{"CFEAcimaUI neither S nor N", ticket, "<CFEAcimaUI>N", "<CFEAcimaUI>Y"},
		{"CFEAcimaUI on an e-Factura", factura, "<CFENumReferencia>", "<CFEAcimaUI>N</CFEAcimaUI><CFENumReferencia>"},
		{"credit note without reference", note, note[strings.Index(note, "    <Referencia>"):strings.Index(note, "  </CFEItem>")], ""},
	} {
		if !strings.Contains(c.doc, c.old) {
			t.Fatalf("%s: %q not in the golden file", c.name, c.old)
		}
		if _, err := fiscalsim.ValidateCFE([]byte(strings.Replace(c.doc, c.old, c.new, 1))); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	ci := strings.Replace(strings.Replace(ticket, "<Totales>", "<Totales>", 1), "</IdDoc>",
		"</IdDoc><Receptor><RcpTipoDocRecep>3</RcpTipoDocRecep><RcpCodPaisRecep>UY</RcpCodPaisRecep><RcpDocRecep>12345672</RcpDocRecep></Receptor>", 1)
	if _, err := fiscalsim.ValidateCFE([]byte(ci)); err != nil {
		t.Fatalf("valid CI refused: %v", err)
	}
	if _, err := fiscalsim.ValidateCFE([]byte(strings.Replace(ci, "12345672", "12345673", 1))); err == nil {
		t.Error("CI with a wrong check digit accepted")
	}
}

// TestSandboxChecksCreditNoteReferences emits the USD e-Factura and credit
// notes against it through the sandbox: a note naming a document that was
// never issued, or crediting more than the invoice, is refused.
func TestSandboxChecksCreditNoteReferences(t *testing.T) {
	t.Parallel()
	sb := fiscalsim.New(fiscalsim.Config{EmpCodigo: testEmpCodigo, EmpPK: testEmpPK, AccessKey: testAccessKey})
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, 5*time.Second)
	ctx := context.Background()
	inv, err := c.Emit(ctx, usdFactura())
	if err != nil || inv.Series != "A" || inv.Number != 1 {
		t.Fatalf("emit invoice: %+v %v", inv, err)
	}
	unknown := usdCreditNote()
	unknown.Original.Number = 9
	if _, err := c.Emit(ctx, unknown); !errors.Is(err, fiscal.ErrRefused) {
		t.Fatalf("credit note of a document never issued: %v, want refused", err)
	}
	if _, err := c.Emit(ctx, usdCreditNote()); err != nil {
		t.Fatalf("credit note of half the invoice: %v", err)
	}
	second := usdCreditNote()
	second.Reference = fiscal.Reference("refund", "R-USD-2", fiscal.KindCreditNote)
	second.Lines[0].Quantity, second.Lines[0].AmountMinor, second.TotalMinor = 1, 4999, 4999
	if _, err := c.Emit(ctx, second); err != nil {
		t.Fatalf("credit note of the other half: %v", err)
	}
	third := usdCreditNote()
	third.Reference = fiscal.Reference("refund", "R-USD-3", fiscal.KindCreditNote)
	third.Lines[0].UnitMinor, third.Lines[0].AmountMinor, third.TotalMinor = 1, 1, 1
	if _, err := c.Emit(ctx, third); !errors.Is(err, fiscal.ErrRefused) {
		t.Fatalf("a cent beyond the invoice: %v, want refused", err)
	}
	if n := len(sb.Documents()); n != 3 {
		t.Fatalf("sandbox issued %d documents, want 3", n)
	}
}

// A line name longer than DGI's 80 characters is cut, and the sandbox's
// validator, which refuses longer names, accepts the CFE.
func TestLongLineNameIsCut(t *testing.T) {
	t.Parallel()
	doc := mixedTicket()
	doc.Lines[0].Description = "Refund of order " + strings.Repeat("ñ", 100)
	el, err := cfeElement(doc)
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(el.Item.Detalle.Items[0].NomItem)); n != 80 {
		t.Fatalf("NomItem has %d characters, want 80", n)
	}
	b, err := xml.Marshal(el)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fiscalsim.ValidateCFE(b); err != nil {
		t.Fatalf("validator: %v", err)
	}
	el.Item.Detalle.Items[0].NomItem = doc.Lines[0].Description
	if b, _ = xml.Marshal(el); func() bool { _, err := fiscalsim.ValidateCFE(b); return err == nil }() {
		t.Fatal("the validator accepted a 116-character NomItem")
	}
}
