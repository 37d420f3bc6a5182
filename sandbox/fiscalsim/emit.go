package fiscalsim

import (
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/money"
	providerfiscal "github.com/onceflow/onceflow/provider/fiscal"
)

// dateLayout is the form of CFEFchEmis, FechaIni and FechaFin.
const dateLayout = "2006-01-02"

// CFEStatus values the simulator gives: authorized unless a Rule says
// otherwise.
const (
	statusRejected   = 3
	statusSentToDGI  = 4
	statusAuthorized = 5
	statusObserved   = 8 // the sandbox's own code (see Rule.Observe)
)

// envioCFE is the emission request. Untagged names match any namespace.
type envioCFE struct {
	XMLName    xml.Name   `xml:"EnvioCFE"`
	Encabezado encabezado `xml:"Encabezado"`
	Items      []cfeItem  `xml:"CFE>CFEItem"`
}

// cfeItem is a CFEItem as the simulator reads it (ValidateCFE). Untagged
// names match any namespace.
type cfeItem struct {
	IdDoc struct {
		TipoCFE       string `xml:"CFETipoCFE"`
		FchEmis       string `xml:"CFEFchEmis"`
		MntBruto      string `xml:"CFEMntBruto"`
		AcimaUI       string `xml:"CFEAcimaUI"`
		NumReferencia string `xml:"CFENumReferencia"`
		Adenda        string `xml:"CFEAdenda"`
	} `xml:"IdDoc"`
	Receptor *struct {
		TipoDocRecep string `xml:"RcpTipoDocRecep"`
		CodPaisRecep string `xml:"RcpCodPaisRecep"`
		DocRecep     string `xml:"RcpDocRecep"`
	} `xml:"Receptor"`
	Totales struct {
		TpoMoneda            string `xml:"TotTpoMoneda"`
		TpoCambio            string `xml:"TotTpoCambio"`
		MntNoGrv             string `xml:"TotMntNoGrv"`
		MntExpoyAsim         string `xml:"TotMntExpoyAsim"`
		MntImpuestoPerc      string `xml:"TotMntImpuestoPerc"`
		MntIVaenSusp         string `xml:"TotMntIVaenSusp"`
		MntNetoIvaTasaMin    string `xml:"TotMntNetoIvaTasaMin"`
		MntNetoIVATasaBasica string `xml:"TotMntNetoIVATasaBasica"`
		MntNetoIVAOtra       string `xml:"TotMntNetoIVAOtra"`
		IVATasaMin           string `xml:"TotIVATasaMin"`
		IVATasaBasica        string `xml:"TotIVATasaBasica"`
		MntIVATasaMin        string `xml:"TotMntIVATasaMin"`
		MntIVATasaBasica     string `xml:"TotMntIVATasaBasica"`
		MntIVAOtra           string `xml:"TotMntIVAOtra"`
		MntTotal             string `xml:"TotMntTotal"`
		CantLinDet           string `xml:"TotCantLinDet"`
		MontoNF              string `xml:"TotMontoNF"`
		MntPagar             string `xml:"TotMntPagar"`
	} `xml:"Totales"`
	Items []struct {
		NroLinDet      string `xml:"IteNroLinDet"`
		IndFact        string `xml:"IteIndFact"`
		NomItem        string `xml:"IteNomItem"`
		Cantidad       string `xml:"IteCantidad"`
		UniMed         string `xml:"IteUniMed"`
		PrecioUnitario string `xml:"ItePrecioUnitario"`
		MontoItem      string `xml:"IteMontoItem"`
	} `xml:"Detalle>Item"`
	Referencias []struct {
		TpoDocRef   string `xml:"RefTpoDocRef"`
		Serie       string `xml:"RefSerie"`
		NroCFERef   string `xml:"RefNroCFERef"`
		FechaCFERef string `xml:"RefFechaCFEref"`
		RazonRef    string `xml:"RefRazonRef"`
	} `xml:"Referencia>ReferenciaItem"`
}

// emit serves aws_emissionfactura.aspx: it authenticates the EnvioCFE,
// validates every CFEItem and then issues them all, or refuses the whole
// request and stores nothing.
func (s *Server) emit(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Emits++ })
	doc, ok := s.readRequest(w, r, "Xmlrecepcao")
	if !ok {
		return
	}
	var req envioCFE
	if err := xml.Unmarshal([]byte(doc), &req); err != nil {
		s.refuse(w, opEmit, "EnvioCFERetorno", msgInvalid, "malformed EnvioCFE")
		return
	}
	if !s.authentic(req.Encabezado, doc, "CFE") {
		s.refuse(w, opEmit, "EnvioCFERetorno", msgAuth, "invalid EmpCodigo, EmpPK or EmpCK")
		return
	}
	if len(req.Items) == 0 {
		s.refuse(w, opEmit, "EnvioCFERetorno", msgInvalid, "no CFEItem")
		return
	}
	drafts := make([]Document, 0, len(req.Items))
	for i, it := range req.Items {
		d, err := s.draft(it)
		if err != nil {
			s.refuse(w, opEmit, "EnvioCFERetorno", msgInvalid, fmt.Sprintf("CFEItem %d: %v", i+1, err))
			return
		}
		drafts = append(drafts, d)
	}
	act := s.take(drafts[0].Reference, true)
	_ = backoff.Sleep(r.Context(), act.latency)
	if act.refuse {
		s.count(func(st *Stats) { st.Injected++ })
		s.refuse(w, opEmit, "EnvioCFERetorno", msgInvalid, "document refused (injected)")
		return
	}
	if act.fail {
		s.count(func(st *Stats) { st.Injected++ })
		s.log.Info("emission failed before acting (injected)", zap.String("reference", drafts[0].Reference))
		http.Error(w, "service unavailable (injected fault)", http.StatusServiceUnavailable)
		return
	}
	issued := s.issue(drafts, act)
	for _, d := range issued {
		s.log.Info("cfe issued", zap.String("reference", d.Reference), zap.Int("type", d.Type),
			zap.String("series", d.Series), zap.Int("number", d.Number), zap.Int("status", d.Status))
	}
	if act.hang {
		s.count(func(st *Stats) { st.Injected++ })
		s.log.Info("holding the answer of a stored document (injected)", zap.String("reference", drafts[0].Reference))
		hold(r.Context(), act.hangFor)
	}
	s.answer(w, opEmit, "EnvioCFERetorno", msgOK, "OK", misdescribe(issued, act))
}

// refuse answers msgCod ≠ 0 with an empty ListaCFE and counts the refusal.
func (s *Server) refuse(w http.ResponseWriter, op, root string, msgCod int, msgDsc string) {
	s.count(func(st *Stats) { st.Refused++ })
	s.log.Info("request refused", zap.String("op", op), zap.Int("msg_cod", msgCod), zap.String("reason", msgDsc))
	s.answer(w, op, root, msgCod, msgDsc, nil)
}

// draft validates a CFEItem (check, then the references of a credit note
// against the documents issued) and returns the document it asks for,
// without the fields issue assigns.
func (s *Server) draft(it cfeItem) (Document, error) {
	ch, err := check(it)
	if err != nil {
		return Document{}, err
	}
	ref := it.IdDoc.NumReferencia
	if ref == "" || !digits(ref) {
		return Document{}, fmt.Errorf("CFENumReferencia %q: want digits", ref)
	}
	date := it.IdDoc.FchEmis
	if date == "" {
		date = s.cfg.Now().In(providerfiscal.Montevideo).Format(dateLayout)
	} else if _, err := time.Parse(dateLayout, date); err != nil {
		return Document{}, fmt.Errorf("CFEFchEmis %q: want YYYY-MM-DD", date)
	}
	d := Document{
		Reference: ref, Type: ch.Type, Total: money.FormatMinor(ch.PayMinor), Currency: ch.Currency,
		Addendum: it.IdDoc.Adenda, IssueDate: date, RefersTo: ch.Refs, ExchangeRate: ch.ExchangeRate, AcimaUI: ch.AcimaUI,
	}
	if err := s.checkRefs(d, ch.PayMinor); err != nil {
		return Document{}, err
	}
	return d, nil
}

func documentRef(typ, series, number, date, reason string) (DocumentRef, error) {
	t, err := cfeType(typ)
	if err != nil {
		return DocumentRef{}, fmt.Errorf("RefTpoDocRef: %w", err)
	}
	n, err := strconv.Atoi(number)
	if err != nil || n <= 0 {
		return DocumentRef{}, fmt.Errorf("RefNroCFERef %q: want a positive number", number)
	}
	return DocumentRef{Type: t, Series: series, Number: n, Date: date, Reason: reason}, nil
}

// cfeType parses a DGI document type code (101 e-Ticket, 111 e-Factura, ...).
func cfeType(s string) (int, error) {
	t, err := strconv.Atoi(s)
	if err != nil || t < 101 || t > 299 {
		return 0, fmt.Errorf("%q is not a CFE type", s)
	}
	return t, nil
}

// isNote reports whether DGI type t is a credit or debit note (x02, x03,
// x12, x13, …, x53, contingency 2xx included).
func isNote(t int) bool {
	r := t % 100
	return r <= 53 && (r%10 == 2 || r%10 == 3)
}

// issue numbers drafts (series "A", increasing per type), gives them the
// status act asks for (authorized by default) and stores them, twice each
// when act duplicates; it returns the issued documents.
func (s *Server) issue(drafts []Document, act action) []Document {
	now := s.cfg.Now()
	s.mu.Lock()
	issued := make([]Document, 0, len(drafts))
	copies := 1
	if act.duplicate {
		copies = 2
	}
	for _, draft := range drafts {
		for i := range copies {
			draft.Injected = i > 0
			issued = append(issued, s.storeLocked(draft, act, now))
		}
	}
	s.mu.Unlock()
	for _, d := range issued {
		s.hooks.statusChanged(d)
	}
	return issued
}

// storeLocked numbers draft, gives it its status and provider fields,
// stores it and returns a copy. The caller holds s.mu.
func (s *Server) storeLocked(draft Document, act action, now time.Time) Document {
	d := draft.clone()
	s.numbers[d.Type]++
	d.Series, d.Number = "A", s.numbers[d.Type]
	d.Status, d.pendingLeft = initialStatus(act)
	d.CAEID = fmt.Sprintf("90%d", d.Type)
	d.CAEFrom, d.CAETo, d.CAEExpires = 1, caeBlock, caeExpiry(d.IssueDate, now)
	d.SecurityCode = securityCode()
	d.QRCode = qrURL(s.cfg.EmpCodigo, d)
	d.CreatedAt = now
	s.docs = append(s.docs, d)
	s.index.add(len(s.docs)-1, d)
	return d.clone()
}

// caeBlock is the size of the number range each type's one simulated CAE
// authorizes (series A, numbers 1 to caeBlock).
const caeBlock = 1_000_000

// caeExpiry is the simulated CAE's expiry date, YYYY-MM-DD: two years after
// the issue date (or now, when it is not a date), as DGI grants CAEs for a
// limited time.
func caeExpiry(issueDate string, now time.Time) string {
	d, err := time.Parse(dateLayout, issueDate)
	if err != nil {
		d = now
	}
	return d.AddDate(2, 0, 0).Format(dateLayout)
}

// initialStatus is the CFEStatus of a new document and how many queries it
// stays pending.
func initialStatus(act action) (status, pendingLeft int) {
	switch {
	case act.observe:
		return statusObserved, 0
	case act.reject:
		return statusRejected, 0
	case act.pending != 0:
		return statusSentToDGI, act.pending
	}
	return statusAuthorized, 0
}

// securityCode returns a random 6-character CFECodigoSeguridad.
func securityCode() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// qrURL mimics DGI's consultaQR link (issuer, type, series, number, total,
// date dd/mm/yyyy, security code) on a host that never resolves.
func qrURL(issuer string, d Document) string {
	date, _ := time.Parse(dateLayout, d.IssueDate)
	return fmt.Sprintf("https://fiscal.sandbox.invalid/consultaQR/cfe?%s,%d,%s,%d,%s,%s,%s",
		issuer, d.Type, d.Series, d.Number, d.Total, date.Format("02/01/2006"), d.SecurityCode)
}

func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
