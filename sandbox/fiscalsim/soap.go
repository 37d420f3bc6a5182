package fiscalsim

import (
	"bytes"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"go.uber.org/zap"
)

// maxBody bounds every SOAP request body the simulator reads.
const maxBody = 1 << 20

// Message codes of the Encabezado of every answer.
const (
	msgOK      = 0
	msgAuth    = 1
	msgInvalid = 2
)

// SOAP operations, as named in the envelope.
const (
	opEmit  = "WS_EmissionFactura"
	opQuery = "WS_ConsultaFactura"
)

const envelopeOpen = `<?xml version="1.0" encoding="utf-8"?>` +
	`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:gx="Gx"><soapenv:Body>`

const envelopeClose = `</soapenv:Body></soapenv:Envelope>`

// errNoParam means the envelope does not carry the operation's parameter.
var errNoParam = errors.New("parameter not found")

// readParam returns the un-escaped text of the first element named param
// (local name, any namespace) in the SOAP envelope read from r.
func readParam(r io.Reader, param string) (string, error) {
	dec := xml.NewDecoder(r)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read %s: %w", param, errNoParam)
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", param, err)
		}
		start, ok := tok.(xml.StartElement)
		if !ok || start.Name.Local != param {
			continue
		}
		var text struct {
			Value string `xml:",chardata"`
		}
		if err := dec.DecodeElement(&text, &start); err != nil {
			return "", fmt.Errorf("read %s: %w", param, err)
		}
		return text.Value, nil
	}
}

// readRequest reads the business XML carried by param in r's SOAP envelope,
// answering a SOAP Fault when there is none.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, param string) (string, bool) {
	doc, err := readParam(http.MaxBytesReader(w, r.Body, maxBody), param)
	if err == nil && strings.TrimSpace(doc) == "" {
		err = fmt.Errorf("read %s: %w", param, errNoParam)
	}
	if err != nil {
		s.count(func(st *Stats) { st.Refused++ })
		s.log.Info("soap request refused", zap.String("path", r.URL.Path), zap.Error(err))
		writeFault(w, err.Error())
		return "", false
	}
	return doc, true
}

// encabezado is the authentication block of a request.
type encabezado struct {
	EmpCodigo string `xml:"EmpCodigo"`
	EmpPK     string `xml:"EmpPK"`
	EmpCK     string `xml:"EmpCK"`
}

// authentic reports whether h names the configured branch and partner and
// EmpCK is the lowercase hex MD5 of AccessKey + the exact <section>…</section>
// text of doc.
func (s *Server) authentic(h encabezado, doc, section string) bool {
	signed, ok := element(doc, section)
	if !ok {
		return false
	}
	sum := md5.Sum([]byte(s.cfg.AccessKey + signed))
	want := hex.EncodeToString(sum[:])
	return h.EmpCodigo == s.cfg.EmpCodigo && h.EmpPK == s.cfg.EmpPK &&
		subtle.ConstantTimeCompare([]byte(h.EmpCK), []byte(want)) == 1
}

// element returns doc's text from the first <name> to the following </name>,
// both included, exactly as sent.
func element(doc, name string) (string, bool) {
	open, end := "<"+name+">", "</"+name+">"
	i := strings.Index(doc, open)
	if i < 0 {
		return "", false
	}
	j := strings.Index(doc[i:], end)
	if j < 0 {
		return "", false
	}
	return doc[i : i+j+len(end)], true
}

// retorno is the business XML of every answer (EnvioCFERetorno or
// ConsultaCFERetorno, set in XMLName).
type retorno struct {
	XMLName    xml.Name
	Encabezado retornoEncabezado `xml:"Encabezado"`
	ListaCFE   listaCFE          `xml:"ListaCFE"`
}

type retornoEncabezado struct {
	EmpCodigo string `xml:"EmpCodigo"`
	MsgCod    int    `xml:"MsgCod"`
	MsgDsc    string `xml:"MsgDsc"`
}

type listaCFE struct {
	CFE []cfeRetorno `xml:"CFE"`
}

// cfeRetorno describes one document in an answer, in the wire contract's
// field order.
type cfeRetorno struct {
	CFETipo            int    `xml:"CFETipo"`
	CFESerie           string `xml:"CFESerie"`
	CFENro             int    `xml:"CFENro"`
	CFEStatus          int    `xml:"CFEStatus"`
	CFEMsgCod          int    `xml:"CFEMsgCod"`
	CFEMsgDsc          string `xml:"CFEMsgDsc"`
	CFENumReferencia   string `xml:"CFENumReferencia"`
	CFEFchEmis         string `xml:"CFEFchEmis"`
	CFEAdenda          string `xml:"CFEAdenda"`
	CFETotMntPagar     string `xml:"CFETotMntPagar"`
	TotTpoMoneda       string `xml:"TotTpoMoneda"`
	CFECodigoSeguridad string `xml:"CFECodigoSeguridad"`
	CFEQrCode          string `xml:"CFEQrCode"`
	CFEDatosAvanzados  struct {
		CFECAEId      string `xml:"CFECAEId"`
		CFECAENroIni  int    `xml:"CFECAENroIni"`
		CFECAENroFin  int    `xml:"CFECAENroFin"`
		CFECAEFchVenc string `xml:"CFECAEFchVenc"`
	} `xml:"CFEDatosAvanzados"`
	Erros string `xml:"Erros"`
}

func describe(d Document) cfeRetorno {
	c := cfeRetorno{
		CFETipo: d.Type, CFESerie: d.Series, CFENro: d.Number, CFEStatus: d.Status,
		CFENumReferencia: d.Reference, CFEFchEmis: d.IssueDate, CFEAdenda: d.Addendum,
		CFETotMntPagar: d.Total, TotTpoMoneda: d.Currency, CFECodigoSeguridad: d.SecurityCode,
		CFEQrCode: d.QRCode,
	}
	c.CFEDatosAvanzados.CFECAEId = d.CAEID
	c.CFEDatosAvanzados.CFECAENroIni, c.CFEDatosAvanzados.CFECAENroFin = d.CAEFrom, d.CAETo
	c.CFEDatosAvanzados.CFECAEFchVenc = d.CAEExpires
	return c
}

// answer writes root (EnvioCFERetorno or ConsultaCFERetorno) with msgCod and
// docs, escaped into op's Xmlretorno.
func (s *Server) answer(w http.ResponseWriter, op, root string, msgCod int, msgDsc string, docs []Document) {
	ret := retorno{
		XMLName:    xml.Name{Local: root},
		Encabezado: retornoEncabezado{EmpCodigo: s.cfg.EmpCodigo, MsgCod: msgCod, MsgDsc: msgDsc},
	}
	for _, d := range docs {
		ret.ListaCFE.CFE = append(ret.ListaCFE.CFE, describe(d))
	}
	inner, err := xml.Marshal(ret)
	if err != nil {
		writeFault(w, "encode answer")
		return
	}
	var buf bytes.Buffer
	buf.WriteString(envelopeOpen)
	fmt.Fprintf(&buf, "<gx:%s.ExecuteResponse><gx:Xmlretorno>", op)
	_ = xml.EscapeText(&buf, inner)
	fmt.Fprintf(&buf, "</gx:Xmlretorno></gx:%s.ExecuteResponse>", op)
	buf.WriteString(envelopeClose)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// writeFault answers a SOAP 1.1 client Fault with HTTP 500.
func writeFault(w http.ResponseWriter, reason string) {
	var buf bytes.Buffer
	buf.WriteString(envelopeOpen)
	buf.WriteString("<soapenv:Fault><faultcode>soapenv:Client</faultcode><faultstring>")
	_ = xml.EscapeText(&buf, []byte(reason))
	buf.WriteString("</faultstring></soapenv:Fault>")
	buf.WriteString(envelopeClose)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write(buf.Bytes())
}
