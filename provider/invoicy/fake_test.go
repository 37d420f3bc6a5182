package invoicy

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/provider/fiscal"
)

const (
	testEmpCodigo = "SUC1"
	testEmpPK     = "PK-123"
	testAccessKey = "secret-access-key"
)

// fakeReply answers one business request: an HTTP status and the business
// XML to return in Xmlretorno (ignored unless status is 2xx).
type fakeReply func(tb testing.TB, path, business string) (int, string)

// fakeInvoiCy is a minimal InvoiCy that checks the envelope and EmpCK of
// every request, records the business XML and answers with reply.
type fakeInvoiCy struct {
	tb    testing.TB
	reply fakeReply

	mu       sync.Mutex
	requests []string // business XML, unescaped
}

func newFake(tb testing.TB, reply fakeReply) (*fakeInvoiCy, *httptest.Server) {
	tb.Helper()
	f := &fakeInvoiCy{tb: tb, reply: reply}
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeInvoiCy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	op := map[string]operation{opEmit.path: opEmit, opQuery.path: opQuery}[r.URL.Path]
	if op.path == "" || r.Method != http.MethodPost {
		f.tb.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/xml; charset=utf-8" {
		f.tb.Errorf("Content-Type %q", ct)
	}
	if sa := r.Header.Get("SOAPAction"); sa != op.action {
		f.tb.Errorf("SOAPAction %q, want %q", sa, op.action)
	}
	business := soapParam(f.tb, body, op.param)
	checkEmpCK(f.tb, business)
	f.mu.Lock()
	f.requests = append(f.requests, business)
	f.mu.Unlock()
	status, ret := f.reply(f.tb, r.URL.Path, business)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, soapAnswer(op, ret))
}

func (f *fakeInvoiCy) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// soapParam returns the unescaped text of the parameter element.
func soapParam(tb testing.TB, envelope []byte, param string) string {
	tb.Helper()
	d := xml.NewDecoder(bytes.NewReader(envelope))
	for {
		tok, err := d.Token()
		if err != nil {
			tb.Errorf("no %s in request: %v", param, err)
			return ""
		}
		if s, ok := tok.(xml.StartElement); ok && s.Name.Local == param {
			if s.Name.Space != "Gx" {
				tb.Errorf("%s in namespace %q, want Gx", param, s.Name.Space)
			}
			var text string
			if err := d.DecodeElement(&text, &s); err != nil {
				tb.Errorf("decode %s: %v", param, err)
			}
			return text
		}
	}
}

// checkEmpCK recomputes EmpCK the way InvoiCy does: over the exact bytes of
// the <CFE> or <Filtros> element inside the business XML.
func checkEmpCK(tb testing.TB, business string) {
	tb.Helper()
	element := between(business, "<CFE>", "</CFE>")
	if element == "" {
		element = between(business, "<Filtros>", "</Filtros>")
	}
	got := between(business, "<EmpCK>", "</EmpCK>")
	got = strings.TrimSuffix(strings.TrimPrefix(got, "<EmpCK>"), "</EmpCK>")
	if element == "" || got != empCK(testAccessKey, []byte(element)) {
		tb.Errorf("EmpCK %q does not cover the element sent", got)
	}
	for _, want := range []string{"<EmpCodigo>" + testEmpCodigo + "</EmpCodigo>", "<EmpPK>" + testEmpPK + "</EmpPK>"} {
		if !strings.Contains(business, want) {
			tb.Errorf("business XML lacks %s", want)
		}
	}
}

// between returns the substring from the first open to the last close,
// both included, or "".
func between(s, open, close string) string {
	i, j := strings.Index(s, open), strings.LastIndex(s, close)
	if i < 0 || j < i {
		return ""
	}
	return s[i : j+len(close)]
}

// soapAnswer wraps a business answer in a SOAP response envelope.
func soapAnswer(op operation, ret string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/"><SOAP-ENV:Body>`)
	b.WriteString(`<` + op.method + `Response xmlns="Gx"><Xmlretorno>`)
	_ = xml.EscapeText(&b, []byte(ret))
	b.WriteString(`</Xmlretorno></` + op.method + `Response></SOAP-ENV:Body></SOAP-ENV:Envelope>`)
	return b.String()
}

// heldXML renders a held document as an answer's <CFE> element.
func heldXML(h fiscal.Held) string {
	var b strings.Builder
	field := func(name, v string) {
		b.WriteString("<" + name + ">")
		_ = xml.EscapeText(&b, []byte(v))
		b.WriteString("</" + name + ">")
	}
	b.WriteString("<CFE>")
	field("CFETipo", itoa(int64(h.Type)))
	field("CFESerie", h.Series)
	field("CFENro", itoa(h.Number))
	field("CFEStatus", h.ProviderStatus)
	field("CFEMsgCod", "0")
	field("CFEMsgDsc", "")
	field("CFENumReferencia", h.Reference)
	field("CFEFchEmis", h.IssueDate.Format(dateLayout))
	field("CFEAdenda", h.Addendum)
	field("CFETotMntPagar", money.FormatMinor(h.TotalMinor))
	field("TotTpoMoneda", h.Currency)
	field("CFECodigoSeguridad", h.SecurityCode)
	field("CFEQrCode", h.VerifyURL)
	b.WriteString("<CFEDatosAvanzados>")
	field("CFECAEId", h.CAEID)
	if h.CAETo != 0 {
		field("CFECAENroIni", itoa(h.CAEFrom))
		field("CFECAENroFin", itoa(h.CAETo))
		field("CFECAEFchVenc", h.CAEExpires.Format(dateLayout))
	}
	b.WriteString("</CFEDatosAvanzados><Erros></Erros></CFE>")
	return b.String()
}

// retornoXML renders a business answer with code msgCod and the documents.
func retornoXML(root string, msgCod int, docs ...fiscal.Held) string {
	var b strings.Builder
	b.WriteString("<" + root + "><Encabezado><EmpCodigo>" + testEmpCodigo + "</EmpCodigo><MsgCod>" + itoa(int64(msgCod)) + "</MsgCod><MsgDsc>")
	if msgCod == 0 {
		b.WriteString("OK")
	} else {
		b.WriteString("Clave de acceso incorrecta")
	}
	b.WriteString("</MsgDsc></Encabezado><ListaCFE>")
	for _, h := range docs {
		b.WriteString(heldXML(h))
	}
	b.WriteString("</ListaCFE></" + root + ">")
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// newTestClient returns a client for srv with a short timeout.
func newTestClient(tb testing.TB, baseURL string, timeout time.Duration) *Client {
	tb.Helper()
	c, err := New(Config{
		BaseURL: baseURL + "/", EmpCodigo: testEmpCodigo, EmpPK: testEmpPK,
		AccessKey: testAccessKey, Timeout: timeout,
	}, nil)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return c
}
