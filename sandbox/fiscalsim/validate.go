package fiscalsim

import (
	"encoding/xml"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/pkg/taxid"
)

// Checked is a CFEItem as the validator read it, amounts in minor units.
type Checked struct {
	Type         int
	Currency     string
	ExchangeRate string // TotTpoCambio as sent, empty for UYU
	Lines        []CheckedLine
	Totals       map[string]int64 // each Totales amount sent, by its element name without "Tot"
	LineCount    int              // TotCantLinDet
	ReceiverType int              // RcpTipoDocRecep, 0 when there is no Receptor
	AcimaUI      string           // CFEAcimaUI: S above the UI threshold, N at or under it, empty when not sent
	Refs         []DocumentRef
	PayMinor     int64 // TotMntPagar
}

// CheckedLine is one Detalle item as read.
type CheckedLine struct {
	IndFact     int
	AmountMinor int64
}

// ValidateCFE reads a <CFE> element as onceflow sends it to InvoiCy and
// checks what DGI would check of each CFEItem on its own: types and codes,
// the buyer's RUT or CI check digit, each line's quantity × price, the
// totals of every rate (net and VAT adding up to the lines, the net being
// the gross divided by 1 + the rate to the cent), the total, the line count,
// the amount to pay, TotTpoCambio exactly when the currency is not UYU, and
// CFEAcimaUI (only on e-Tickets; S, above the UI threshold, needs an
// identified buyer).
// References of credit notes are checked against the documents issued by
// Server, not here.
func ValidateCFE(element []byte) ([]Checked, error) {
	var c struct {
		Items []cfeItem `xml:"CFEItem"`
	}
	if err := xml.Unmarshal(element, &c); err != nil {
		return nil, fmt.Errorf("malformed CFE: %w", err)
	}
	if len(c.Items) == 0 {
		return nil, errors.New("no CFEItem")
	}
	out := make([]Checked, len(c.Items))
	for i, it := range c.Items {
		ch, err := check(it)
		if err != nil {
			return nil, fmt.Errorf("CFEItem %d: %w", i+1, err)
		}
		out[i] = ch
	}
	return out, nil
}

// exchangeRate is TpoCambio's form: up to 4 integer digits and 3 decimals.
var exchangeRate = regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,3})?$`)

// check validates one CFEItem.
func check(it cfeItem) (Checked, error) {
	typ, err := cfeType(it.IdDoc.TipoCFE)
	if err != nil {
		return Checked{}, fmt.Errorf("CFETipoCFE: %w", err)
	}
	ch := Checked{Type: typ, Currency: it.Totales.TpoMoneda, ExchangeRate: it.Totales.TpoCambio, Totals: map[string]int64{}}
	if err := checkCurrency(ch); err != nil {
		return Checked{}, err
	}
	if err := checkReceiver(it, &ch); err != nil {
		return Checked{}, err
	}
	if err := checkAcimaUI(it, &ch); err != nil {
		return Checked{}, err
	}
	if err := checkLines(it, &ch); err != nil {
		return Checked{}, err
	}
	if err := checkTotals(it, &ch); err != nil {
		return Checked{}, err
	}
	for _, ri := range it.Referencias {
		ref, err := documentRef(ri.TpoDocRef, ri.Serie, ri.NroCFERef, ri.FechaCFERef, ri.RazonRef)
		if err != nil {
			return Checked{}, fmt.Errorf("ReferenciaItem: %w", err)
		}
		ch.Refs = append(ch.Refs, ref)
	}
	if isNote(typ) && len(ch.Refs) == 0 {
		return Checked{}, fmt.Errorf("CFE type %d is a credit/debit note and needs a Referencia", typ)
	}
	return ch, nil
}

func checkCurrency(ch Checked) error {
	switch {
	case len(ch.Currency) != 3 || strings.ToUpper(ch.Currency) != ch.Currency:
		return fmt.Errorf("TotTpoMoneda %q: want an ISO 4217 code", ch.Currency)
	case ch.Currency == "UYU" && ch.ExchangeRate != "":
		return errors.New("TotTpoCambio must be absent in UYU")
	case ch.Currency != "UYU" && ch.ExchangeRate == "":
		return fmt.Errorf("TotTpoCambio missing for a CFE in %s", ch.Currency)
	case ch.Currency != "UYU" && (!exchangeRate.MatchString(ch.ExchangeRate) || strings.Trim(ch.ExchangeRate, "0.") == ""):
		return fmt.Errorf("TotTpoCambio %q: want 0.001 to 9999.999", ch.ExchangeRate)
	}
	return nil
}

// checkReceiver checks the buyer's document: a RUT or CI with its check
// digit, and a RUT on every e-Factura and its notes.
func checkReceiver(it cfeItem, ch *Checked) error {
	r := it.Receptor
	if r == nil {
		if ch.Type == 111 || ch.Type == 112 {
			return errors.New("an e-Factura needs a Receptor")
		}
		return nil
	}
	n, err := strconv.Atoi(r.TipoDocRecep)
	if err != nil || n < 1 || n > 7 {
		return fmt.Errorf("RcpTipoDocRecep %q: want 1 to 7", r.TipoDocRecep)
	}
	ch.ReceiverType = n
	switch {
	case n == 2 && !taxid.ValidRUT(r.DocRecep):
		return errors.New("RcpDocRecep is not a RUT with a valid check digit")
	case n == 3 && !taxid.ValidCI(r.DocRecep):
		return errors.New("RcpDocRecep is not a CI with a valid check digit")
	case (n == 2 || n == 3) && r.CodPaisRecep != "UY":
		return errors.New("a RUT or CI is Uruguayan: RcpCodPaisRecep must be UY")
	case (ch.Type == 111 || ch.Type == 112) && n != 2:
		return errors.New("an e-Factura's receiver must be identified by a RUT")
	}
	return nil
}

// checkAcimaUI checks CFEAcimaUI: S or N, sent only on e-Tickets and
// their notes, and S (above the UI threshold, where DGI requires the buyer
// identified) only with a Receptor naming its document, and its country
// outside a RUT or CI. The sandbox cannot tell the flag from the amount,
// since it knows no UI value.
func checkAcimaUI(it cfeItem, ch *Checked) error {
	v := it.IdDoc.AcimaUI
	ch.AcimaUI = v
	r := it.Receptor
	switch {
	case v == "":
		return nil
	case v != "S" && v != "N":
		return fmt.Errorf("CFEAcimaUI %q: want S or N", v)
	case ch.Type/10 != 10:
		return fmt.Errorf("CFEAcimaUI is only for e-Tickets, not type %d", ch.Type)
	case v == "S" && (r == nil || strings.TrimSpace(r.DocRecep) == ""):
		return errors.New("an e-Ticket above the UI threshold (CFEAcimaUI S) needs its buyer identified: Receptor with RcpDocRecep")
	case v == "S" && ch.ReceiverType != 2 && ch.ReceiverType != 3 && strings.TrimSpace(r.CodPaisRecep) == "":
		return errors.New("an e-Ticket above the UI threshold needs RcpCodPaisRecep for a foreign document")
	}
	return nil
}

// checkLines checks each item's number, indicator and quantity × price.
func checkLines(it cfeItem, ch *Checked) error {
	items := it.Items
	limit := 700
	if ch.Type == 111 || ch.Type == 112 {
		limit = 200
	}
	if len(items) == 0 || len(items) > limit {
		return fmt.Errorf("%d lines: want 1 to %d", len(items), limit)
	}
	for i, x := range items {
		if x.NroLinDet != strconv.Itoa(i+1) {
			return fmt.Errorf("line %d: IteNroLinDet %q", i+1, x.NroLinDet)
		}
		ind, err := strconv.Atoi(x.IndFact)
		if err != nil || !knownIndFact[ind] {
			return fmt.Errorf("line %d: IteIndFact %q is not one DGI defines for these types", i+1, x.IndFact)
		}
		amount, err := money.ParseMinor(x.MontoItem)
		if err != nil {
			return fmt.Errorf("line %d: IteMontoItem: %w", i+1, err)
		}
		qty, ok1 := new(big.Rat).SetString(x.Cantidad)
		price, ok2 := new(big.Rat).SetString(x.PrecioUnitario)
		if !ok1 || !ok2 || qty.Sign() <= 0 || price.Sign() < 0 {
			return fmt.Errorf("line %d: IteCantidad or ItePrecioUnitario is not a decimal", i+1)
		}
		if product := qty.Mul(qty, price); product.Cmp(big.NewRat(amount, 100)) != 0 {
			return fmt.Errorf("line %d: quantity × price is %s, IteMontoItem %s", i+1, product.FloatString(2), x.MontoItem)
		}
		if strings.TrimSpace(x.NomItem) == "" || len([]rune(x.NomItem)) > 80 || strings.TrimSpace(x.UniMed) == "" {
			return fmt.Errorf("line %d: IteNomItem (1 to 80 characters) and IteUniMed are required", i+1)
		}
		ch.Lines = append(ch.Lines, CheckedLine{IndFact: ind, AmountMinor: amount})
	}
	return nil
}

// knownIndFact are the IndFact codes of e-Tickets, e-Facturas and their
// notes (8 and 9 belong to remitos and resguardos).
var knownIndFact = map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 10: true, 11: true, 12: true}

// amountFields are the Totales amounts the validator reads, without "Tot".
var amountFields = []string{"MntNoGrv", "MntExpoyAsim", "MntImpuestoPerc", "MntIVaenSusp", "MntNetoIvaTasaMin",
	"MntNetoIVATasaBasica", "MntNetoIVAOtra", "MntIVATasaMin", "MntIVATasaBasica", "MntIVAOtra", "MntTotal", "MontoNF", "MntPagar"}

// checkTotals recomputes the totals from ch.Lines and compares every field.
func checkTotals(it cfeItem, ch *Checked) error {
	t := it.Totales
	sent := map[string]string{"MntNoGrv": t.MntNoGrv, "MntExpoyAsim": t.MntExpoyAsim, "MntImpuestoPerc": t.MntImpuestoPerc,
		"MntIVaenSusp": t.MntIVaenSusp, "MntNetoIvaTasaMin": t.MntNetoIvaTasaMin, "MntNetoIVATasaBasica": t.MntNetoIVATasaBasica,
		"MntNetoIVAOtra": t.MntNetoIVAOtra, "MntIVATasaMin": t.MntIVATasaMin, "MntIVATasaBasica": t.MntIVATasaBasica,
		"MntIVAOtra": t.MntIVAOtra, "MntTotal": t.MntTotal, "MontoNF": t.MontoNF, "MntPagar": t.MntPagar}
	for _, name := range amountFields {
		v, err := signedMinor(sent[name], name == "MontoNF")
		if err != nil {
			return fmt.Errorf("Tot%s: %w", name, err)
		}
		ch.Totals[name] = v
	}
	gross := map[int]int64{}
	for _, l := range ch.Lines {
		gross[l.IndFact] += l.AmountMinor
	}
	got := ch.Totals
	want := map[string]int64{"MntNoGrv": gross[1], "MntExpoyAsim": gross[10], "MntImpuestoPerc": gross[11],
		"MntIVaenSusp": gross[12], "MontoNF": gross[6] - gross[7]}
	for name, w := range want {
		if got[name] != w {
			return fmt.Errorf("Tot%s is %s, the lines say %s", name, money.FormatMinor(got[name]), money.FormatMinor(w))
		}
	}
	inclusive := it.IdDoc.MntBruto == "1"
	if err := checkRate("minimum", gross[2], got["MntNetoIvaTasaMin"], got["MntIVATasaMin"], t.IVATasaMin, 10, inclusive); err != nil {
		return err
	}
	if err := checkRate("basic", gross[3], got["MntNetoIVATasaBasica"], got["MntIVATasaBasica"], t.IVATasaBasica, 22, inclusive); err != nil {
		return err
	}
	if got["MntNetoIVAOtra"]+got["MntIVAOtra"] != gross[4] && inclusive {
		return errors.New("TotMntNetoIVAOtra and TotMntIVAOtra do not add up to the lines at another rate")
	}
	var total int64
	for _, name := range amountFields[:10] {
		total += got[name]
	}
	switch {
	case t.MntTotal == "" || t.MntPagar == "" || t.CantLinDet == "":
		return errors.New("TotMntTotal, TotCantLinDet and TotMntPagar are required")
	case got["MntTotal"] != total:
		return fmt.Errorf("TotMntTotal is %s, its parts add up to %s", t.MntTotal, money.FormatMinor(total))
	case t.CantLinDet != strconv.Itoa(len(ch.Lines)):
		return fmt.Errorf("TotCantLinDet is %s, the CFE has %d lines", t.CantLinDet, len(ch.Lines))
	case got["MntPagar"] != total+got["MontoNF"]:
		return fmt.Errorf("TotMntPagar is %s, want TotMntTotal + TotMontoNF = %s", t.MntPagar, money.FormatMinor(total+got["MontoNF"]))
	}
	ch.LineCount, ch.PayMinor = len(ch.Lines), got["MntPagar"]
	return nil
}

// checkRate checks one rate's net and VAT against gross, the sum of its
// lines: with inclusive prices net + VAT is gross and net is gross / (1 +
// rate) to the cent; otherwise net is gross and VAT net × rate to the cent.
// The rate is sent, and is want %, exactly when the rate has lines.
func checkRate(name string, gross, net, tax int64, rate string, want int64, inclusive bool) error {
	if gross == 0 {
		if net != 0 || tax != 0 || rate != "" {
			return fmt.Errorf("the %s rate has no lines but carries amounts or a rate", name)
		}
		return nil
	}
	r, ok := new(big.Rat).SetString(rate)
	if !ok || r.Cmp(big.NewRat(want, 1)) != 0 {
		return fmt.Errorf("the %s rate is %q, DGI's is %d", name, rate, want)
	}
	factor := new(big.Rat).Add(big.NewRat(1, 1), new(big.Rat).Quo(r, big.NewRat(100, 1)))
	exactNet, exactTax := new(big.Rat).SetInt64(net), new(big.Rat).Mul(new(big.Rat).SetInt64(net), new(big.Rat).Sub(factor, big.NewRat(1, 1)))
	if inclusive {
		if net+tax != gross {
			return fmt.Errorf("the %s rate's net and VAT do not add up to its lines", name)
		}
		exactNet = new(big.Rat).Quo(new(big.Rat).SetInt64(gross), factor)
		if !nearest(exactNet, net) {
			return fmt.Errorf("the %s rate's net %s is not its lines / %s", name, money.FormatMinor(net), factor.FloatString(2))
		}
		return nil
	}
	if net != gross || !nearest(exactTax, tax) {
		return fmt.Errorf("the %s rate's net or VAT does not follow from its lines", name)
	}
	return nil
}

// nearest reports whether got is exact rounded to the minor unit (a tie
// may go either way).
func nearest(exact *big.Rat, got int64) bool {
	d := new(big.Rat).Sub(exact, new(big.Rat).SetInt64(got))
	return new(big.Rat).Abs(d).Cmp(big.NewRat(1, 2)) <= 0
}

// signedMinor parses an amount, empty being zero; a leading "-" is allowed
// only when signed.
func signedMinor(s string, signed bool) (int64, error) {
	if s == "" {
		return 0, nil
	}
	neg := signed && strings.HasPrefix(s, "-")
	v, err := money.ParseMinor(strings.TrimPrefix(s, "-"))
	if neg {
		v = -v
	}
	if err == nil && !signed && strings.HasPrefix(s, "-") {
		err = errors.New("negative")
	}
	return v, err
}

// checkRefs checks a credit note's references against the documents
// issued: each names an issued, unrejected document of the type it
// corrects (101 for 102, 111 for 112, …) in the same currency, and the
// credit notes on it, d included, never add up to more than its total.
func (s *Server) checkRefs(d Document, payMinor int64) error {
	if !isNote(d.Type) || d.Type%10 != 2 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range d.RefersTo {
		if ref.Type != d.Type-1 {
			return fmt.Errorf("a CFE of type %d corrects type %d, not %d", d.Type, d.Type-1, ref.Type)
		}
		orig, ok := s.findLocked(ref)
		if !ok {
			return fmt.Errorf("Referencia: no document %d %s-%d was issued", ref.Type, ref.Series, ref.Number)
		}
		if orig.Currency != d.Currency {
			return fmt.Errorf("Referencia: the document is in %s, the credit note in %s", orig.Currency, d.Currency)
		}
		credited := payMinor
		for _, i := range s.index.referring[cfeNumber{ref.Type, ref.Series, ref.Number}] {
			if x := s.docs[i]; x.Type == d.Type && x.Status != statusRejected && !x.Injected {
				v, _ := money.ParseMinor(x.Total)
				credited += v
			}
		}
		if total, _ := money.ParseMinor(orig.Total); credited > total {
			return fmt.Errorf("credit notes would add up to %s, more than document %s-%d (%s)",
				money.FormatMinor(credited), ref.Series, ref.Number, orig.Total)
		}
	}
	return nil
}

// findLocked returns the issued, unrejected document ref names; the caller
// holds s.mu.
func (s *Server) findLocked(ref DocumentRef) (Document, bool) {
	for _, i := range s.index.numbered(s.docs, ref.Type, ref.Number, ref.Number) {
		if x := s.docs[i]; x.Series == ref.Series && x.Status != statusRejected {
			return x, true
		}
	}
	return Document{}, false
}
