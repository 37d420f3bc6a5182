package fiscalsim_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
	"github.com/onceflow/onceflow/sandbox/fiscalsim"
)

// A test client speaking docs/wire-invoicy.md independently of the server's
// own types.

const (
	testCodigo = "2001"
	testPK     = "partner-key"
	testKey    = "CLAVE_DE_ACCESO_EJEMPLO"
)

func fixedNow() time.Time { return time.Date(2026, 11, 30, 15, 4, 5, 0, time.UTC) }

// start runs a simulator behind a real HTTP server.
func start(tb testing.TB) (*fiscalsim.Server, string) {
	tb.Helper()
	srv := fiscalsim.New(fiscalsim.Config{
		EmpCodigo: testCodigo, EmpPK: testPK, AccessKey: testKey,
		Now: fixedNow, Logger: zaptest.NewLogger(tb),
	})
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	return srv, hs.URL
}

// retorno is the business XML of an answer.
type retorno struct {
	EmpCodigo string `xml:"Encabezado>EmpCodigo"`
	MsgCod    int    `xml:"Encabezado>MsgCod"`
	MsgDsc    string `xml:"Encabezado>MsgDsc"`
	CFEs      []cfe  `xml:"ListaCFE>CFE"`
}

type cfe struct {
	CFETipo, CFENro, CFEStatus                                  int
	CFESerie, CFENumReferencia, CFEFchEmis, CFEAdenda           string
	CFETotMntPagar, TotTpoMoneda, CFECodigoSeguridad, CFEQrCode string
	CAEId                                                       string `xml:"CFEDatosAvanzados>CFECAEId"`
}

// doc describes one CFE to emit.
type doc struct {
	typ        int
	ref, date  string
	total      string
	referencia string // <Referencia> content for notes
}

// cfeXML renders the <CFE> element of an emission.
func (d doc) cfeXML() string {
	total := d.total
	if total == "" {
		total = "1220.00"
	}
	ref := ""
	if d.referencia != "" {
		ref = "<Referencia>" + d.referencia + "</Referencia>"
	}
	return fmt.Sprintf(`<CFE><CFEItem><IdDoc><CFETipoCFE>%d</CFETipoCFE><CFESerie></CFESerie><CFENro></CFENro>`+
		`<CFEFchEmis>%s</CFEFchEmis><CFEMntBruto>1</CFEMntBruto><CFEFmaPago>1</CFEFmaPago>`+
		`<CFENumReferencia>%s</CFENumReferencia><CFEAdenda>onceflow payment D-4-abc invoice</CFEAdenda></IdDoc>`+
		`<Receptor>%[7]s<RcpCodPaisRecep>UY</RcpCodPaisRecep>`+
		`<RcpRznSocRecep>Ana &amp; Co</RcpRznSocRecep></Receptor>`+
		`<Totales><TotTpoMoneda>UYU</TotTpoMoneda>%[6]s<TotMntTotal>%[4]s</TotMntTotal><TotCantLinDet>1</TotCantLinDet><TotMntPagar>%[4]s</TotMntPagar></Totales>`+
		`<Detalle><Item><IteNroLinDet>1</IteNroLinDet><IteIndFact>3</IteIndFact><IteNomItem>Plan</IteNomItem><IteCantidad>1</IteCantidad>`+
		`<IteUniMed>N/A</IteUniMed><ItePrecioUnitario>%[4]s</ItePrecioUnitario><IteMontoItem>%[4]s</IteMontoItem></Item></Detalle>%[5]s</CFEItem></CFE>`,
		d.typ, d.date, d.ref, total, ref, basicTotals(total), receiver(d.typ))
}

// receiver is a CI buyer, or a RUT one on e-Facturas and their notes.
func receiver(typ int) string {
	if typ >= 111 && typ <= 113 {
		return "<RcpTipoDocRecep>2</RcpTipoDocRecep><RcpDocRecep>210000000019</RcpDocRecep>"
	}
	return "<RcpTipoDocRecep>3</RcpTipoDocRecep><RcpDocRecep>12345672</RcpDocRecep>"
}

// basicTotals renders the net and VAT of a gross amount at the basic rate.
func basicTotals(gross string) string {
	minor, err := money.ParseMinor(gross)
	if err != nil {
		return "" // the test sends a malformed total on purpose
	}
	t, _ := vat.Compute([]vat.Line{{Indicator: vat.Basic, AmountMinor: minor}}, vat.DefaultSchedule()[0], true)
	if t.NetBasic == 0 {
		return ""
	}
	return "<TotMntNetoIVATasaBasica>" + money.FormatMinor(t.NetBasic) + "</TotMntNetoIVATasaBasica><TotIVATasaBasica>22</TotIVATasaBasica>" +
		"<TotMntIVATasaBasica>" + money.FormatMinor(t.VATBasic) + "</TotMntIVATasaBasica>"
}

// auth is an Encabezado; ck computes EmpCK from the signed section, nil
// meaning correctly.
type auth struct {
	codigo, pk string
	ck         func(section string) string
}

func goodAuth() auth { return auth{codigo: testCodigo, pk: testPK} }

func (a auth) encabezado(section string) string {
	ck := empCK(testKey, section)
	if a.ck != nil {
		ck = a.ck(section)
	}
	return "<Encabezado><EmpCodigo>" + a.codigo + "</EmpCodigo><EmpPK>" + a.pk + "</EmpPK><EmpCK>" + ck + "</EmpCK></Encabezado>"
}

func empCK(key, section string) string {
	sum := md5.Sum([]byte(key + section))
	return hex.EncodeToString(sum[:])
}

// envelope wraps business XML in the contract's SOAP envelope, escaped.
func envelope(op, param, business string) string {
	var esc bytes.Buffer
	_ = xml.EscapeText(&esc, []byte(business))
	return `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:gx="Gx"><soapenv:Body>` +
		`<gx:` + op + `.Execute><gx:` + param + `>` + esc.String() + `</gx:` + param + `></gx:` + op + `.Execute>` +
		`</soapenv:Body></soapenv:Envelope>`
}

func emitEnvelope(a auth, cfeXML string) string {
	return envelope("WS_EmissionFactura", "Xmlrecepcao", "<EnvioCFE>"+a.encabezado(cfeXML)+cfeXML+"</EnvioCFE>")
}

func queryEnvelope(a auth, filtros string) string {
	return envelope("WS_ConsultaFactura", "Xmlconsulta", "<ConsultaCFE>"+a.encabezado(filtros)+filtros+"</ConsultaCFE>")
}

// byReference is a Filtros for one CFENumReferencia.
func byReference(ref string) string {
	return `<Filtros><TipoCFE></TipoCFE><FechaIni></FechaIni><FechaFin></FechaFin><CFEsEspecificos>` +
		`<CFEsEspecificosItem><CFENumReferencia>` + ref + `</CFENumReferencia></CFEsEspecificosItem></CFEsEspecificos></Filtros>`
}

// byPeriod is a Filtros for a period and optional type.
func byPeriod(typ, from, to string) string {
	return `<Filtros><TipoCFE>` + typ + `</TipoCFE><FechaIni>` + from + `</FechaIni><FechaFin>` + to + `</FechaFin>` +
		`<CFEsEspecificos><CFEsEspecificosItem><CFENumReferencia></CFENumReferencia></CFEsEspecificosItem></CFEsEspecificos></Filtros>`
}

// byNumbers is a Filtros for a period, optional type and a CFEsFaixa
// number range.
func byNumbers(typ, from, to, ini, fin string) string {
	return `<Filtros><TipoCFE>` + typ + `</TipoCFE><FechaIni>` + from + `</FechaIni><FechaFin>` + to + `</FechaFin>` +
		`<CFEsFaixa><CFENroIni>` + ini + `</CFENroIni><CFENroFin>` + fin + `</CFENroFin></CFEsFaixa></Filtros>`
}

// postSOAP posts a SOAP body and returns the HTTP status and raw answer.
func postSOAP(tb testing.TB, url, body string) (int, []byte) {
	tb.Helper()
	resp, err := http.Post(url, "text/xml; charset=utf-8", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, raw
}

// call posts a SOAP request and decodes the Xmlretorno it answers.
func call(tb testing.TB, url, body string) retorno {
	tb.Helper()
	status, raw := postSOAP(tb, url, body)
	if status != http.StatusOK {
		tb.Fatalf("HTTP %d: %s", status, raw)
	}
	var env struct {
		Emit  string `xml:"Body>WS_EmissionFactura.ExecuteResponse>Xmlretorno"`
		Query string `xml:"Body>WS_ConsultaFactura.ExecuteResponse>Xmlretorno"`
	}
	if err := xml.Unmarshal(raw, &env); err != nil || env.Emit+env.Query == "" {
		tb.Fatalf("no Xmlretorno in %s: %v", raw, err)
	}
	var ret retorno
	if err := xml.Unmarshal([]byte(env.Emit+env.Query), &ret); err != nil {
		tb.Fatalf("decode Xmlretorno %s: %v", env.Emit+env.Query, err)
	}
	return ret
}

func emit(tb testing.TB, base string, d doc) cfe {
	tb.Helper()
	ret := call(tb, base+"/InvoiCy/aws_emissionfactura.aspx", emitEnvelope(goodAuth(), d.cfeXML()))
	if ret.MsgCod != 0 || len(ret.CFEs) != 1 {
		tb.Fatalf("emit %+v: %+v", d, ret)
	}
	return ret.CFEs[0]
}

func query(tb testing.TB, base, filtros string) retorno {
	tb.Helper()
	return call(tb, base+"/InvoiCy/aws_consultafactura.aspx", queryEnvelope(goodAuth(), filtros))
}

// getJSON fetches a sandbox JSON endpoint into v.
func getJSON(tb testing.TB, url string, v any) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		tb.Fatal(err)
	}
}
