package fiscalsim_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const ref = "123456789012345678"

func TestEmitThenQueryByReference(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prefix string
		wrap         func(business string) string // nil: the contract's envelope
	}{
		{name: "InvoiCy prefix", prefix: "/InvoiCy"},
		{name: "no prefix", prefix: ""},
		{name: "other namespace prefixes", prefix: "/InvoiCy", wrap: func(b string) string {
			return strings.NewReplacer("soapenv:", "s:", "xmlns:soapenv", "xmlns:s", "gx:", "", `xmlns:gx="Gx"`, "").Replace(b)
		}},
		{name: "CDATA instead of escaping", prefix: "/InvoiCy", wrap: func(b string) string {
			i, j := strings.Index(b, "<gx:Xmlrecepcao>")+len("<gx:Xmlrecepcao>"), strings.Index(b, "</gx:Xmlrecepcao>")
			business := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&#39;", "'").Replace(b[i:j])
			return b[:i] + "<![CDATA[" + business + "]]>" + b[j:]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, base := start(t)
			d := doc{typ: 101, ref: ref, date: "2026-11-30"}
			body := emitEnvelope(goodAuth(), d.cfeXML())
			if tt.wrap != nil {
				body = tt.wrap(body)
			}
			ret := call(t, base+tt.prefix+"/aws_emissionfactura.aspx", body)
			if ret.MsgCod != 0 || ret.EmpCodigo != testCodigo || len(ret.CFEs) != 1 {
				t.Fatalf("emit: %+v", ret)
			}
			got := ret.CFEs[0]
			want := cfe{
				CFETipo: 101, CFESerie: "A", CFENro: 1, CFEStatus: 5, CFENumReferencia: ref,
				CFEFchEmis: "2026-11-30", CFEAdenda: "onceflow payment D-4-abc invoice",
				CFETotMntPagar: "1220.00", TotTpoMoneda: "UYU", CAEId: "90101",
				CFECodigoSeguridad: got.CFECodigoSeguridad, CFEQrCode: got.CFEQrCode,
			}
			if got != want {
				t.Errorf("emitted %+v\nwant     %+v", got, want)
			}
			if len(got.CFECodigoSeguridad) != 6 || !strings.HasPrefix(got.CFEQrCode, "https://") {
				t.Errorf("security code %q, QR %q", got.CFECodigoSeguridad, got.CFEQrCode)
			}

			q := call(t, base+tt.prefix+"/aws_consultafactura.aspx", queryEnvelope(goodAuth(), byReference(ref)))
			if q.MsgCod != 0 || len(q.CFEs) != 1 || q.CFEs[0] != got {
				t.Fatalf("query: %+v, want %+v", q, got)
			}
			docs := srv.Documents()
			if len(docs) != 1 || docs[0].Reference != ref || docs[0].Total != "1220.00" || !docs[0].CreatedAt.Equal(fixedNow()) {
				t.Errorf("Documents() = %+v", docs)
			}
		})
	}
}

func TestUnauthenticatedRequestsAreRefused(t *testing.T) {
	t.Parallel()
	d := doc{typ: 101, ref: ref, date: "2026-11-30"}
	ck := func(f func(string) string) auth { return auth{codigo: testCodigo, pk: testPK, ck: f} }
	tests := []struct {
		name string
		a    auth
	}{
		{"EmpCK with another key", ck(func(s string) string { return empCK("other", s) })},
		{"EmpCK over other bytes", ck(func(s string) string { return empCK(testKey, strings.Replace(s, "><", "> <", 1)) })},
		{"EmpCK uppercase", ck(func(s string) string { return strings.ToUpper(empCK(testKey, s)) })},
		{"empty EmpCK", ck(func(string) string { return "" })},
		{"unknown EmpCodigo", auth{codigo: "9999", pk: testPK}},
		{"wrong EmpPK", auth{codigo: testCodigo, pk: "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, base := start(t)
			ret := call(t, base+"/InvoiCy/aws_emissionfactura.aspx", emitEnvelope(tt.a, d.cfeXML()))
			if ret.MsgCod != 1 || len(ret.CFEs) != 0 {
				t.Errorf("emit: %+v, want MsgCod 1 and no CFE", ret)
			}
			if n := len(srv.Documents()); n != 0 {
				t.Errorf("%d documents stored", n)
			}
			emit(t, base, d) // a good one, so the query has something to leak
			q := call(t, base+"/InvoiCy/aws_consultafactura.aspx", queryEnvelope(tt.a, byReference(ref)))
			if q.MsgCod != 1 || len(q.CFEs) != 0 {
				t.Errorf("query: %+v, want MsgCod 1 and no CFE", q)
			}
			if st := srv.Stats(); st.Refused != 2 || st.Documents != 1 {
				t.Errorf("stats = %+v, want 2 refused and 1 document", st)
			}
		})
	}
}

func TestSameReferenceTwiceIssuesTwoDocuments(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	first := emit(t, base, doc{typ: 101, ref: ref, date: "2026-11-30"})
	second := emit(t, base, doc{typ: 101, ref: ref, date: "2026-11-30"})
	emit(t, base, doc{typ: 101, ref: "42", date: "2026-11-30"})
	if first.CFENro != 1 || second.CFENro != 2 {
		t.Errorf("numbers %d, %d; want 1, 2", first.CFENro, second.CFENro)
	}
	if n := srv.CountByReference(ref); n != 2 {
		t.Errorf("CountByReference = %d, want 2", n)
	}
	if q := query(t, base, byReference(ref)); len(q.CFEs) != 2 || q.CFEs[0] != first || q.CFEs[1] != second {
		t.Errorf("query = %+v, want both documents", q.CFEs)
	}

	var list struct {
		Documents []struct {
			Reference string `json:"reference"`
			Type      int    `json:"type"`
			Series    string `json:"series"`
			Number    int    `json:"number"`
			Status    int    `json:"status"`
			Total     string `json:"total"`
			Currency  string `json:"currency"`
			Addendum  string `json:"addendum"`
			IssueDate string `json:"issue_date"`
			CreatedAt string `json:"created_at"`
		} `json:"documents"`
		ByReference map[string]int `json:"by_reference"`
	}
	getJSON(t, base+"/sandbox/documents?reference="+ref, &list)
	if len(list.Documents) != 2 || list.ByReference[ref] != 2 || len(list.ByReference) != 1 {
		t.Fatalf("documents = %+v", list)
	}
	if d := list.Documents[1]; d.Number != 2 || d.Series != "A" || d.Status != 5 || d.Total != "1220.00" ||
		d.Currency != "UYU" || d.IssueDate != "2026-11-30" || d.Addendum == "" || d.CreatedAt == "" || d.Type != 101 {
		t.Errorf("document = %+v", d)
	}
	getJSON(t, base+"/sandbox/documents", &list)
	if len(list.Documents) != 3 || list.ByReference["42"] != 1 {
		t.Errorf("all documents = %+v", list)
	}
}

func TestNumbersAndCreditNotes(t *testing.T) {
	t.Parallel()
	srv, base := start(t)
	tests := []struct {
		d      doc
		number int
	}{
		{doc{typ: 101, ref: "1"}, 1},
		{doc{typ: 101, ref: "2"}, 2},
		{doc{typ: 111, ref: "3"}, 1},
		{doc{typ: 102, ref: "4", referencia: referencia(101, 2)}, 1},
	}
	for _, tt := range tests { // sequential: numbering depends on order
		if got := emit(t, base, tt.d); got.CFENro != tt.number || got.CFEFchEmis != "2026-11-30" {
			t.Errorf("type %d ref %s: number %d date %s, want %d and today in Uruguay", tt.d.typ, tt.d.ref, got.CFENro, got.CFEFchEmis, tt.number)
		}
	}
	docs := srv.Documents()
	note := docs[len(docs)-1]
	if len(note.RefersTo) != 1 || note.RefersTo[0].Type != 101 || note.RefersTo[0].Number != 2 || note.RefersTo[0].Series != "A" {
		t.Errorf("credit note refers to %+v", note.RefersTo)
	}
	// The credit notes on an invoice never add up to more than it: a second
	// full one on A-2 is refused, a half one on A-1 issued, twice.
	again := doc{typ: 102, ref: "5", referencia: referencia(101, 2)}
	if ret := call(t, base+"/InvoiCy/aws_emissionfactura.aspx", emitEnvelope(goodAuth(), again.cfeXML())); ret.MsgCod == 0 ||
		!strings.Contains(ret.MsgDsc, "more than document A-2") {
		t.Errorf("a second full credit note on A-2: %+v, want it refused", ret)
	}
	for i, ref := range []string{"6", "7"} {
		if got := emit(t, base, doc{typ: 102, ref: ref, total: "610.00", referencia: referencia(101, 1)}); got.CFENro != 2+i {
			t.Errorf("half credit note %d on A-1: number %d, want %d", i+1, got.CFENro, 2+i)
		}
	}
	third := doc{typ: 102, ref: "8", total: "1.22", referencia: referencia(101, 1)}
	if ret := call(t, base+"/InvoiCy/aws_emissionfactura.aspx", emitEnvelope(goodAuth(), third.cfeXML())); ret.MsgCod == 0 ||
		!strings.Contains(ret.MsgDsc, "more than document A-1") {
		t.Errorf("a credit note on A-1 past its total: %+v, want it refused", ret)
	}
}

// referencia is a credit note's Referencia to the document of type typ,
// series A, numbered number.
func referencia(typ, number int) string {
	return fmt.Sprintf(`<ReferenciaItem><RefTpoDocRef>%d</RefTpoDocRef><RefSerie>A</RefSerie><RefNroCFERef>%d</RefNroCFERef>`+
		`<RefFechaCFEref>2026-11-30</RefFechaCFEref><RefRazonRef>Refund</RefRazonRef></ReferenciaItem>`, typ, number)
}

func TestPeriodListing(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	for i, d := range []doc{
		{typ: 101, ref: "1", date: "2026-11-29"},
		{typ: 101, ref: "2", date: "2026-11-30"},
		{typ: 111, ref: "3", date: "2026-11-30"},
		{typ: 101, ref: "4", date: "2026-12-01"},
		{typ: 101, ref: "5", date: "2026-11-29"}, // issued last, dated first
	} {
		if got := emit(t, base, d); got.CFENumReferencia != d.ref {
			t.Fatalf("emit %d: %+v", i, got)
		}
	}
	tests := []struct {
		name, filtros string
		want          string // references in issue order
	}{
		{"one day", byPeriod("", "2026-11-30", "2026-11-30"), "2,3"},
		{"inclusive range", byPeriod("", "2026-11-29", "2026-12-01"), "1,2,3,4,5"},
		{"a day, in issue order", byPeriod("101", "2026-11-29", "2026-11-29"), "1,5"},
		{"with type", byPeriod("101", "2026-11-30", "2026-12-01"), "2,4"},
		{"empty period", byPeriod("", "2026-10-01", "2026-10-31"), ""},
		// Numbers run per type: 101 has 1 to 4 (references 1, 2, 4, 5), 111 has 1.
		{"number range", byNumbers("", "2026-11-29", "2026-12-01", "2", "3"), "2,4"},
		{"number range of a type", byNumbers("111", "2026-11-29", "2026-12-01", "1", "5"), "3"},
		{"number range on a day", byNumbers("", "2026-11-30", "2026-11-30", "1", "1"), "3"},
		{"number range across days", byNumbers("101", "2026-11-29", "2026-12-01", "3", "4"), "4,5"},
		{"number range beyond", byNumbers("101", "2026-11-29", "2026-12-01", "5", "100"), ""},
		{"reference within period", strings.Replace(byPeriod("", "2026-11-30", "2026-11-30"),
			"<CFENumReferencia></CFENumReferencia>", "<CFENumReferencia>1</CFENumReferencia>", 1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := query(t, base, tt.filtros)
			var refs []string
			for _, c := range q.CFEs {
				refs = append(refs, c.CFENumReferencia)
			}
			if q.MsgCod != 0 || strings.Join(refs, ",") != tt.want {
				t.Errorf("got MsgCod %d refs %v, want %s", q.MsgCod, refs, tt.want)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body string
	}{
		{"reference not digits", "aws_emissionfactura.aspx", emitEnvelope(goodAuth(), doc{typ: 101, ref: "ABC-1"}.cfeXML())},
		{"no reference", "aws_emissionfactura.aspx", emitEnvelope(goodAuth(), doc{typ: 101}.cfeXML())},
		{"bad amount", "aws_emissionfactura.aspx", emitEnvelope(goodAuth(), doc{typ: 101, ref: "1", total: "12,50"}.cfeXML())},
		{"bad date", "aws_emissionfactura.aspx", emitEnvelope(goodAuth(), doc{typ: 101, ref: "1", date: "30/11/2026"}.cfeXML())},
		{"bad type", "aws_emissionfactura.aspx", emitEnvelope(goodAuth(), doc{typ: 7, ref: "1"}.cfeXML())},
		{"credit note without Referencia", "aws_emissionfactura.aspx", emitEnvelope(goodAuth(), doc{typ: 112, ref: "1"}.cfeXML())},
		{"no filter", "aws_consultafactura.aspx", queryEnvelope(goodAuth(), byPeriod("", "", ""))},
		{"half a period", "aws_consultafactura.aspx", queryEnvelope(goodAuth(), byPeriod("", "2026-11-30", ""))},
		{"bad period", "aws_consultafactura.aspx", queryEnvelope(goodAuth(), byPeriod("", "2026-11-30", "tomorrow"))},
		{"half a number range", "aws_consultafactura.aspx", queryEnvelope(goodAuth(), byNumbers("", "2026-11-30", "2026-11-30", "1", ""))},
		{"number range reversed", "aws_consultafactura.aspx", queryEnvelope(goodAuth(), byNumbers("", "2026-11-30", "2026-11-30", "5", "4"))},
		{"number range from zero", "aws_consultafactura.aspx", queryEnvelope(goodAuth(), byNumbers("", "2026-11-30", "2026-11-30", "0", "4"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, base := start(t)
			ret := call(t, base+"/InvoiCy/"+tt.path, tt.body)
			if ret.MsgCod != 2 || len(ret.CFEs) != 0 || ret.MsgDsc == "" {
				t.Errorf("got %+v, want MsgCod 2 with a description", ret)
			}
			if n := len(srv.Documents()); n != 0 {
				t.Errorf("%d documents stored", n)
			}
		})
	}
}

func TestSOAPFaults(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	tests := []struct{ name, path, body string }{
		{"not XML", "aws_emissionfactura.aspx", "hello"},
		{"query sent to emit", "aws_emissionfactura.aspx", queryEnvelope(goodAuth(), byReference(ref))},
		{"empty parameter", "aws_consultafactura.aspx", envelope("WS_ConsultaFactura", "Xmlconsulta", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, raw := postSOAP(t, base+"/InvoiCy/"+tt.path, tt.body)
			if status != http.StatusInternalServerError || !strings.Contains(string(raw), "<soapenv:Fault>") {
				t.Errorf("got %d %s, want a SOAP Fault", status, raw)
			}
		})
	}
}

func TestStatsAndHealth(t *testing.T) {
	t.Parallel()
	_, base := start(t)
	emit(t, base, doc{typ: 101, ref: ref, date: "2026-11-30"})
	query(t, base, byReference(ref))
	call(t, base+"/aws_emissionfactura.aspx", emitEnvelope(auth{codigo: "x", pk: "y"}, doc{typ: 101, ref: "1"}.cfeXML()))
	var st map[string]int
	getJSON(t, base+"/sandbox/stats", &st)
	want := map[string]int{"documents": 1, "emits": 2, "queries": 1, "refused": 1}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("stats[%s] = %d, want %d (%v)", k, st[k], v, st)
		}
	}
	var health map[string]string
	getJSON(t, base+"/healthz", &health)
}
