package invoicy

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
)

// dateLayout is how InvoiCy writes calendar dates.
const dateLayout = "2006-01-02"

// Fixed values of the emitted CFE.
const (
	mntBrutoIVAIncluded = 1     // CFEMntBruto: prices include IVA
	fmaPagoContado      = 1     // CFEFmaPago: paid in cash/at once
	uniMedNone          = "N/A" // IteUniMed: no unit of measure
	razonRefund         = "Refund"
)

// empCK returns InvoiCy's check key: lowercase hex MD5 of the access key
// followed by the exact bytes of the <CFE> or <Filtros> element sent.
func empCK(accessKey string, element []byte) string {
	h := md5.New()
	h.Write([]byte(accessKey))
	h.Write(element)
	return hex.EncodeToString(h.Sum(nil))
}

type encabezado struct {
	XMLName   xml.Name `xml:"Encabezado"`
	EmpCodigo string   `xml:"EmpCodigo"`
	EmpPK     string   `xml:"EmpPK"`
	EmpCK     string   `xml:"EmpCK"`
}

// envelop wraps element in root, after an Encabezado whose EmpCK is computed
// over element's exact bytes, so the check key covers what is sent.
func (c *Client) envelop(root string, element []byte) ([]byte, error) {
	enc, err := xml.Marshal(encabezado{EmpCodigo: c.empCodigo, EmpPK: c.empPK, EmpCK: empCK(c.accessKey, element)})
	if err != nil {
		return nil, fmt.Errorf("marshal Encabezado: %w", err)
	}
	var b bytes.Buffer
	b.WriteString("<" + root + ">")
	b.Write(enc)
	b.Write(element)
	b.WriteString("</" + root + ">")
	return b.Bytes(), nil
}

type cfe struct {
	XMLName xml.Name `xml:"CFE"`
	Item    cfeItem  `xml:"CFEItem"`
}

type cfeItem struct {
	IdDoc      idDoc       `xml:"IdDoc"`
	Receptor   *receptor   `xml:"Receptor,omitempty"`
	Totales    totales     `xml:"Totales"`
	Detalle    detalle     `xml:"Detalle"`
	Referencia *referencia `xml:"Referencia,omitempty"`
}

type idDoc struct {
	TipoCFE       int    `xml:"CFETipoCFE"`
	Serie         string `xml:"CFESerie"`
	Nro           string `xml:"CFENro"`
	FchEmis       string `xml:"CFEFchEmis"`
	MntBruto      int    `xml:"CFEMntBruto"`
	FmaPago       int    `xml:"CFEFmaPago"`
	AcimaUI       string `xml:"CFEAcimaUI,omitempty"` // S or N on e-Tickets (acimaUI); left out when not known
	NumReferencia string `xml:"CFENumReferencia"`
	Adenda        string `xml:"CFEAdenda"`
}

type receptor struct {
	TipoDocRecep int    `xml:"RcpTipoDocRecep"`
	CodPaisRecep string `xml:"RcpCodPaisRecep"`
	DocRecep     string `xml:"RcpDocRecep"`
	RznSocRecep  string `xml:"RcpRznSocRecep"`
	DirRecep     string `xml:"RcpDirRecep"`
	CiudadRecep  string `xml:"RcpCiudadRecep"`
	DeptoRecep   string `xml:"RcpDeptoRecep"`
	CorreoRecep  string `xml:"RcpCorreoRecep"`
}

// totales is DGI's Totales in DGI's order and casing, each name prefixed
// with InvoiCy's "Tot"; amounts that are zero are left out, as are the
// rates of a rate without lines.
type totales struct {
	TpoMoneda         string `xml:"TotTpoMoneda"`
	TpoCambio         string `xml:"TotTpoCambio,omitempty"`
	MntNoGrv          string `xml:"TotMntNoGrv,omitempty"`
	MntExpoyAsim      string `xml:"TotMntExpoyAsim,omitempty"`
	MntIVaenSusp      string `xml:"TotMntIVaenSusp,omitempty"`
	MntNetoIvaTasaMin string `xml:"TotMntNetoIvaTasaMin,omitempty"`
	MntNetoIVATasaBas string `xml:"TotMntNetoIVATasaBasica,omitempty"`
	IVATasaMin        string `xml:"TotIVATasaMin,omitempty"`
	IVATasaBasica     string `xml:"TotIVATasaBasica,omitempty"`
	MntIVATasaMin     string `xml:"TotMntIVATasaMin,omitempty"`
	MntIVATasaBasica  string `xml:"TotMntIVATasaBasica,omitempty"`
	MntTotal          string `xml:"TotMntTotal"`
	CantLinDet        int    `xml:"TotCantLinDet"`
	MontoNF           string `xml:"TotMontoNF,omitempty"`
	MntPagar          string `xml:"TotMntPagar"`
}

type detalle struct {
	Items []item `xml:"Item"`
}

// item is one Detalle line, in DGI's order.
type item struct {
	NroLinDet      int    `xml:"IteNroLinDet"`
	IndFact        int    `xml:"IteIndFact"`
	NomItem        string `xml:"IteNomItem"`
	Cantidad       int64  `xml:"IteCantidad"`
	UniMed         string `xml:"IteUniMed"`
	PrecioUnitario string `xml:"ItePrecioUnitario"`
	MontoItem      string `xml:"IteMontoItem"`
}

type referencia struct {
	Item referenciaItem `xml:"ReferenciaItem"`
}

type referenciaItem struct {
	TpoDocRef   int    `xml:"RefTpoDocRef"`
	Serie       string `xml:"RefSerie"`
	NroCFERef   int64  `xml:"RefNroCFERef"`
	FechaCFERef string `xml:"RefFechaCFEref"`
	RazonRef    string `xml:"RefRazonRef"`
}

// docTypeCode maps fiscal buyer document types to DGI's TipoDocRecep.
func docTypeCode(docType string) (int, bool) {
	switch strings.ToUpper(strings.TrimSpace(docType)) {
	case fiscal.DocRUT:
		return 2, true
	case fiscal.DocCI:
		return 3, true
	case fiscal.DocOther:
		return 4, true
	case fiscal.DocPassport:
		return 5, true
	}
	return 0, false
}

// cfeElement builds the <CFE> element of doc; doc must be valid.
func cfeElement(doc fiscal.Document) (cfe, error) {
	tot, err := doc.Totals()
	if err != nil {
		return cfe{}, err
	}
	it := cfeItem{
		IdDoc: idDoc{
			TipoCFE:       int(doc.Type),
			FchEmis:       doc.IssueDate.Format(dateLayout),
			MntBruto:      mntBrutoIVAIncluded,
			FmaPago:       fmaPagoContado,
			AcimaUI:       acimaUI(doc.Threshold),
			NumReferencia: doc.Reference,
			Adenda:        doc.Addendum,
		},
		Totales: totalesOf(doc, tot),
	}
	if code, ok := docTypeCode(doc.Buyer.DocType); ok {
		b := doc.Buyer
		country := b.Country
		if country == "" && (code == 2 || code == 3) {
			country = "UY" // RUT and CI are Uruguayan documents
		}
		it.Receptor = &receptor{
			TipoDocRecep: code, CodPaisRecep: country, DocRecep: b.Number, RznSocRecep: b.Name,
			DirRecep: b.Address, CiudadRecep: b.City, DeptoRecep: b.Department, CorreoRecep: b.Email,
		}
	}
	for i, l := range doc.Lines {
		it.Detalle.Items = append(it.Detalle.Items, item{
			NroLinDet:      i + 1,
			IndFact:        int(l.Indicator()),
			NomItem:        cutRunes(l.Description, maxNomItem),
			Cantidad:       l.Quantity,
			UniMed:         uniMedNone,
			PrecioUnitario: money.FormatMinor(l.UnitMinor),
			MontoItem:      money.FormatMinor(l.AmountMinor),
		})
	}
	if o := doc.Original; o != nil {
		it.Referencia = &referencia{Item: referenciaItem{
			TpoDocRef: int(o.Type), Serie: o.Series, NroCFERef: o.Number,
			FechaCFERef: o.Date.Format(dateLayout), RazonRef: razonRefund,
		}}
	}
	return cfe{Item: it}, nil
}

// acimaUI renders an e-Ticket's place against the UI threshold as
// CFEAcimaUI: S above it, N at or under it, left out when not known (and
// on e-Facturas, which Validate keeps unknown).
func acimaUI(t fiscal.Threshold) string {
	switch t {
	case fiscal.ThresholdAbove:
		return "S"
	case fiscal.ThresholdAtOrUnder:
		return "N"
	}
	return ""
}

// maxNomItem is the longest item name DGI admits, in characters.
const maxNomItem = 80

// cutRunes returns s cut to at most n characters.
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// totalesOf renders t, doc's totals.
func totalesOf(doc fiscal.Document, t vat.Totals) totales {
	out := totales{
		TpoMoneda: doc.Currency, MntNoGrv: nonZero(t.NonTaxed), MntExpoyAsim: nonZero(t.Export),
		MntIVaenSusp: nonZero(t.Suspended), MntNetoIvaTasaMin: nonZero(t.NetMinimum), MntNetoIVATasaBas: nonZero(t.NetBasic),
		MntIVATasaMin: nonZero(t.VATMinimum), MntIVATasaBasica: nonZero(t.VATBasic),
		MntTotal: money.FormatMinor(t.Total), CantLinDet: t.Lines, MontoNF: nonZero(t.NonBillable), MntPagar: money.FormatMinor(t.Pay),
	}
	if doc.ExchangeRate != 0 {
		out.TpoCambio = fiscal.FormatExchangeRate(doc.ExchangeRate)
	}
	if t.NetMinimum != 0 {
		out.IVATasaMin = vat.Percent(t.MinimumRateBP)
	}
	if t.NetBasic != 0 {
		out.IVATasaBasica = vat.Percent(t.BasicRateBP)
	}
	return out
}

// nonZero formats minor units, or returns "" (left out) for zero.
func nonZero(minor int64) string {
	if minor == 0 {
		return ""
	}
	return money.FormatMinor(minor)
}

// envioCFE returns the EnvioCFE business XML for doc.
func (c *Client) envioCFE(doc fiscal.Document) ([]byte, error) {
	el, err := cfeElement(doc)
	if err != nil {
		return nil, fmt.Errorf("totals: %w", err)
	}
	element, err := xml.Marshal(el)
	if err != nil {
		return nil, fmt.Errorf("marshal CFE: %w", err)
	}
	return c.envelop("EnvioCFE", element)
}

type filtros struct {
	XMLName     xml.Name     `xml:"Filtros"`
	TipoCFE     string       `xml:"TipoCFE"`
	FechaIni    string       `xml:"FechaIni"`
	FechaFin    string       `xml:"FechaFin"`
	Especificos *especificos `xml:"CFEsEspecificos,omitempty"`
	Faixa       *faixa       `xml:"CFEsFaixa,omitempty"`
}

// faixa is a range of CFE numbers, both inclusive.
type faixa struct {
	NroIni int64 `xml:"CFENroIni"`
	NroFin int64 `xml:"CFENroFin"`
}

type especificos struct {
	Items []especificoItem `xml:"CFEsEspecificosItem"`
}

type especificoItem struct {
	NumReferencia string `xml:"CFENumReferencia"`
}

// consultaCFE returns the ConsultaCFE business XML for f.
func (c *Client) consultaCFE(f filtros) ([]byte, error) {
	element, err := xml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("marshal Filtros: %w", err)
	}
	return c.envelop("ConsultaCFE", element)
}

// retorno is the business answer of both operations (EnvioCFERetorno,
// ConsultaCFERetorno). Field names match in any namespace.
type retorno struct {
	XMLName    xml.Name
	Encabezado struct {
		MsgCod  string `xml:"MsgCod"`
		MsgDsc  string `xml:"MsgDsc"`
		MsgDesc string `xml:"MsgDesc"` // spelling seen in some clients
	} `xml:"Encabezado"`
	CFEs []cfeResult `xml:"ListaCFE>CFE"`
}

type cfeResult struct {
	Tipo            string `xml:"CFETipo"`
	Serie           string `xml:"CFESerie"`
	Nro             string `xml:"CFENro"`
	Status          string `xml:"CFEStatus"`
	NumReferencia   string `xml:"CFENumReferencia"`
	FchEmis         string `xml:"CFEFchEmis"`
	Adenda          string `xml:"CFEAdenda"`
	TotMntPagar     string `xml:"CFETotMntPagar"`
	TpoMoneda       string `xml:"TotTpoMoneda"`
	CodigoSeguridad string `xml:"CFECodigoSeguridad"`
	QrCode          string `xml:"CFEQrCode"`
	Avanzados       struct {
		CAEId       string `xml:"CFECAEId"`
		CAENroIni   string `xml:"CFECAENroIni"`
		CAENroFin   string `xml:"CFECAENroFin"`
		CAEFchVenc  string `xml:"CFECAEFchVenc"`
		TotMntPagar string `xml:"CFETotMntPagar"` // where InvoiCy's integrations place it (docs/wire-invoicy.md)
	} `xml:"CFEDatosAvanzados"`
}

// helds converts the documents of an answer.
func (c *Client) helds(r retorno) ([]fiscal.Held, error) {
	var out []fiscal.Held
	for i, x := range r.CFEs {
		h, err := c.held(x)
		if err != nil {
			return nil, fmt.Errorf("answer document %d: %w", i+1, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// held converts one answer document. Empty series, number, total and date
// are left zero; malformed ones are errors.
func (c *Client) held(x cfeResult) (fiscal.Held, error) {
	t := strings.TrimSpace
	h := fiscal.Held{
		Reference:      t(x.NumReferencia),
		Series:         t(x.Serie),
		ProviderStatus: t(x.Status),
		SecurityCode:   t(x.CodigoSeguridad),
		CAEID:          t(x.Avanzados.CAEId),
		VerifyURL:      t(x.QrCode),
		Currency:       t(x.TpoMoneda),
		Addendum:       x.Adenda, // compared exactly with ours
		Status:         fiscal.StatusUnknown,
	}
	if s, ok := c.statuses[h.ProviderStatus]; ok {
		h.Status = s
	}
	typ, err := strconv.Atoi(t(x.Tipo))
	if err != nil {
		return fiscal.Held{}, fmt.Errorf("CFETipo %q is not a number", x.Tipo)
	}
	h.Type = fiscal.CFEType(typ)
	if n := t(x.Nro); n != "" {
		if h.Number, err = strconv.ParseInt(n, 10, 64); err != nil {
			return fiscal.Held{}, fmt.Errorf("CFENro %q is not a number", n)
		}
	}
	total := t(x.TotMntPagar)
	if total == "" {
		total = t(x.Avanzados.TotMntPagar)
	}
	if total != "" {
		if h.TotalMinor, err = money.ParseMinor(total); err != nil {
			return fiscal.Held{}, fmt.Errorf("CFETotMntPagar: %w", err)
		}
	}
	if h.IssueDate, err = date("CFEFchEmis", x.FchEmis); err != nil {
		return fiscal.Held{}, err
	}
	return h, caeRange(&h, x)
}

// caeRange reads the CAE's number range and expiry into h; empty ones are
// left zero, malformed ones are errors.
func caeRange(h *fiscal.Held, x cfeResult) error {
	var err error
	if h.CAEFrom, err = number("CFECAENroIni", x.Avanzados.CAENroIni); err != nil {
		return err
	}
	if h.CAETo, err = number("CFECAENroFin", x.Avanzados.CAENroFin); err != nil {
		return err
	}
	h.CAEExpires, err = date("CFECAEFchVenc", x.Avanzados.CAEFchVenc)
	return err
}

// number parses the optional integer field name; empty is 0.
func number(name, v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number", name, v)
	}
	return n, nil
}

// date parses the optional calendar date field name, tolerating a time
// part; empty is the zero time.
func date(name, v string) (time.Time, error) {
	d := strings.TrimSpace(v)
	if d == "" {
		return time.Time{}, nil
	}
	if len(d) > len(dateLayout) {
		d = d[:len(dateLayout)] // tolerate a time part
	}
	t, err := time.Parse(dateLayout, d)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not a date", name, v)
	}
	return t, nil
}
