package invoicy

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
)

func TestEmpCKPublishedVector(t *testing.T) {
	t.Parallel()
	// docs/wire-invoicy.md, "Authentication".
	element := `<CFE><CFEItem><IdDoc><CFETipoCFE>101</CFETipoCFE><CFENumReferencia>1001</CFENumReferencia></IdDoc></CFEItem></CFE>`
	if got, want := empCK("CLAVE_DE_ACCESO_EJEMPLO", []byte(element)), "58fc3d9b7b9053547c3c8e90d578ffa8"; got != want {
		t.Fatalf("empCK = %s, want %s", got, want)
	}
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// creditNote is an e-Factura credit note whose text needs escaping.
func creditNote() fiscal.Document {
	return fiscal.Document{
		Reference:  fiscal.Reference("refund", "REF1", fiscal.KindCreditNote),
		Type:       fiscal.EFacturaCreditNote,
		IssueDate:  day(2026, 12, 1),
		Currency:   "UYU",
		TotalMinor: 122000,
		Buyer: fiscal.Buyer{
			DocType: "RUT", Number: "210000000019", Name: `Acme & "Co"`,
			Address: "Av. 18 de Julio 1234", City: "Montevideo", Department: "Montevideo", Email: "ap@acme.example",
		},
		Lines:    []fiscal.Line{{Description: "Plan <Pro>", Quantity: 2, UnitMinor: 61000, AmountMinor: 122000}},
		Original: &fiscal.OriginalRef{Type: fiscal.EFactura, Series: "A", Number: 7, Date: day(2026, 11, 30)},
		Addendum: fiscal.Addendum("refund", "REF1", fiscal.KindCreditNote),
	}
}

func TestEnvioCFEGolden(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, "http://invoicy.test", 0)
	doc := creditNote()
	got, err := c.envioCFE(doc)
	if err != nil {
		t.Fatal(err)
	}
	wantCFE := `<CFE><CFEItem>` +
		`<IdDoc><CFETipoCFE>112</CFETipoCFE><CFESerie></CFESerie><CFENro></CFENro>` +
		`<CFEFchEmis>2026-12-01</CFEFchEmis><CFEMntBruto>1</CFEMntBruto><CFEFmaPago>1</CFEFmaPago>` +
		`<CFENumReferencia>` + doc.Reference + `</CFENumReferencia>` +
		`<CFEAdenda>onceflow refund REF1 credit_note</CFEAdenda></IdDoc>` +
		`<Receptor><RcpTipoDocRecep>2</RcpTipoDocRecep><RcpCodPaisRecep>UY</RcpCodPaisRecep>` +
		`<RcpDocRecep>210000000019</RcpDocRecep><RcpRznSocRecep>Acme &amp; &#34;Co&#34;</RcpRznSocRecep>` +
		`<RcpDirRecep>Av. 18 de Julio 1234</RcpDirRecep><RcpCiudadRecep>Montevideo</RcpCiudadRecep>` +
		`<RcpDeptoRecep>Montevideo</RcpDeptoRecep><RcpCorreoRecep>ap@acme.example</RcpCorreoRecep></Receptor>` +
		`<Totales><TotTpoMoneda>UYU</TotTpoMoneda><TotMntNetoIVATasaBasica>1000.00</TotMntNetoIVATasaBasica>` +
		`<TotIVATasaBasica>22</TotIVATasaBasica><TotMntIVATasaBasica>220.00</TotMntIVATasaBasica>` +
		`<TotMntTotal>1220.00</TotMntTotal><TotCantLinDet>1</TotCantLinDet><TotMntPagar>1220.00</TotMntPagar></Totales>` +
		`<Detalle><Item><IteNroLinDet>1</IteNroLinDet><IteIndFact>3</IteIndFact><IteNomItem>Plan &lt;Pro&gt;</IteNomItem>` +
		`<IteCantidad>2</IteCantidad><IteUniMed>N/A</IteUniMed><ItePrecioUnitario>610.00</ItePrecioUnitario>` +
		`<IteMontoItem>1220.00</IteMontoItem></Item></Detalle>` +
		`<Referencia><ReferenciaItem><RefTpoDocRef>111</RefTpoDocRef><RefSerie>A</RefSerie>` +
		`<RefNroCFERef>7</RefNroCFERef><RefFechaCFEref>2026-11-30</RefFechaCFEref><RefRazonRef>Refund</RefRazonRef></ReferenciaItem></Referencia>` +
		`</CFEItem></CFE>`
	want := `<EnvioCFE><Encabezado><EmpCodigo>SUC1</EmpCodigo><EmpPK>PK-123</EmpPK><EmpCK>` +
		md5hex(testAccessKey+wantCFE) + `</EmpCK></Encabezado>` + wantCFE + `</EnvioCFE>`
	if string(got) != want {
		t.Fatalf("EnvioCFE\n got %s\nwant %s", got, want)
	}
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestEnvioCFEAnonymousTicket(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, "http://invoicy.test", 0)
	doc := fiscal.Document{
		Reference: fiscal.Reference("payment", "D-4-abc", fiscal.KindInvoice), Type: fiscal.ETicket,
		IssueDate: day(2026, 11, 30), Currency: "UYU", TotalMinor: 5,
		Lines:    []fiscal.Line{{Description: "x", Quantity: 1, UnitMinor: 5, AmountMinor: 5}},
		Addendum: fiscal.Addendum("payment", "D-4-abc", fiscal.KindInvoice),
	}
	got, err := c.envioCFE(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	element := between(s, "<CFE>", "</CFE>")
	if !strings.Contains(s, "<EmpCK>"+empCK(testAccessKey, []byte(element))+"</EmpCK>") {
		t.Errorf("EmpCK does not cover the <CFE> element in %s", s)
	}
	for _, absent := range []string{"<Receptor>", "<Referencia>"} {
		if strings.Contains(s, absent) {
			t.Errorf("anonymous e-Ticket carries %s", absent)
		}
	}
	if !strings.Contains(s, "<TotMntPagar>0.05</TotMntPagar>") {
		t.Errorf("total not rendered in two decimals: %s", s)
	}
}

func TestConsultaCFE(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, "http://invoicy.test", 0)
	tests := []struct {
		name string
		f    filtros
		want string
	}{
		{"by reference", filtros{Especificos: &especificos{Items: []especificoItem{{NumReferencia: "123"}}}},
			`<Filtros><TipoCFE></TipoCFE><FechaIni></FechaIni><FechaFin></FechaFin>` +
				`<CFEsEspecificos><CFEsEspecificosItem><CFENumReferencia>123</CFENumReferencia></CFEsEspecificosItem></CFEsEspecificos></Filtros>`},
		{"by period", filtros{FechaIni: "2026-11-01", FechaFin: "2026-11-30"},
			`<Filtros><TipoCFE></TipoCFE><FechaIni>2026-11-01</FechaIni><FechaFin>2026-11-30</FechaFin></Filtros>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.consultaCFE(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			want := `<ConsultaCFE><Encabezado><EmpCodigo>SUC1</EmpCodigo><EmpPK>PK-123</EmpPK><EmpCK>` +
				md5hex(testAccessKey+tt.want) + `</EmpCK></Encabezado>` + tt.want + `</ConsultaCFE>`
			if string(got) != want {
				t.Fatalf("ConsultaCFE\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestSOAPRequestEscapes(t *testing.T) {
	t.Parallel()
	payload := []byte(`<EnvioCFE><CFE><X>a &amp; "b"</X></CFE></EnvioCFE>`)
	env, err := soapRequest(opEmit, payload)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), "<EnvioCFE>") {
		t.Fatalf("business XML not escaped: %s", env)
	}
	if !strings.HasPrefix(string(env), `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:gx="Gx"><soapenv:Body><gx:WS_EmissionFactura.Execute><gx:Xmlrecepcao>`) {
		t.Errorf("envelope: %s", env)
	}
	if got := soapParam(t, env, "Xmlrecepcao"); got != string(payload) {
		t.Errorf("round trip: got %q, want %q", got, payload)
	}
}
