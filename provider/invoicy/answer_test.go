package invoicy

import (
	"errors"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/provider/fiscal"
)

func TestParseAnswer(t *testing.T) {
	t.Parallel()
	ret := `<EnvioCFERetorno><Encabezado><MsgCod>0</MsgCod></Encabezado><ListaCFE><CFE><CFETipo>101</CFETipo>` +
		`<CFENro>7</CFENro><CFEStatus>5</CFEStatus><CFENumReferencia>42</CFENumReferencia></CFE></ListaCFE></EnvioCFERetorno>`
	escaped := strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(ret)
	tests := []struct {
		name   string
		answer string
		want   error // nil: parses to one document with reference 42
	}{
		{"escaped", soapAnswer(opEmit, ret), nil},
		{"prefixed and namespaced",
			`<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><gx:WS_EmissionFactura.ExecuteResponse xmlns:gx="Gx">` +
				`<gx:Xmlretorno>` + escaped + `</gx:Xmlretorno></gx:WS_EmissionFactura.ExecuteResponse></s:Body></s:Envelope>`, nil},
		{"cdata", `<Envelope><Body><Xmlretorno><![CDATA[` + ret + `]]></Xmlretorno></Body></Envelope>`, nil},
		{"literal child elements", `<Envelope><Body><Xmlretorno>` + ret + `</Xmlretorno></Body></Envelope>`, nil},
		{"latin1 envelope", `<?xml version="1.0" encoding="ISO-8859-1"?><Envelope><Body><Xmlretorno>` + escaped + `</Xmlretorno></Body></Envelope>`, nil},
		{"garbage", "<html>Service Unavailable", fiscal.ErrAmbiguous},
		{"not xml", "\x00\x01garbage", fiscal.ErrAmbiguous},
		{"no Xmlretorno", `<Envelope><Body><Other/></Body></Envelope>`, fiscal.ErrAmbiguous},
		{"empty Xmlretorno", `<Envelope><Body><Xmlretorno></Xmlretorno></Body></Envelope>`, fiscal.ErrAmbiguous},
		{"soap fault", `<Envelope><Body><Fault><faultcode>Server</faultcode><faultstring>boom</faultstring></Fault></Body></Envelope>`, fiscal.ErrAmbiguous},
		{"garbage inside", soapAnswer(opEmit, "<EnvioCFERetorno><Encabezado>"), fiscal.ErrAmbiguous},
		{"wrong root", soapAnswer(opEmit, strings.ReplaceAll(ret, "EnvioCFERetorno", "ConsultaCFERetorno")), fiscal.ErrAmbiguous},
		{"MsgCod missing", soapAnswer(opEmit, "<EnvioCFERetorno><Encabezado></Encabezado></EnvioCFERetorno>"), fiscal.ErrAmbiguous},
		{"MsgCod 1", soapAnswer(opEmit, retornoXML("EnvioCFERetorno", 1)), fiscal.ErrRefused},
		{"MsgCod 99 MsgDesc", soapAnswer(opEmit, "<EnvioCFERetorno><Encabezado><MsgCod>99</MsgCod><MsgDesc>x</MsgDesc></Encabezado></EnvioCFERetorno>"), fiscal.ErrRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := parseAnswer(opEmit, []byte(tt.answer))
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("parseAnswer = %v, want %v", err, tt.want)
				}
				if errors.Is(err, fiscal.ErrAmbiguous) == errors.Is(err, fiscal.ErrRefused) {
					t.Fatalf("error %v must be exactly one of ambiguous/refused", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseAnswer: %v", err)
			}
			if len(r.CFEs) != 1 || r.CFEs[0].NumReferencia != "42" || r.CFEs[0].Nro != "7" {
				t.Fatalf("parsed %+v", r)
			}
		})
	}
}

func TestHeldConversion(t *testing.T) {
	t.Parallel()
	want := fiscal.Held{
		Reference: "997043242926837602", Type: fiscal.ETicket, Series: "A", Number: 7,
		Status: fiscal.StatusAuthorized, ProviderStatus: "5", SecurityCode: "a1B2c3", CAEID: "90123",
		CAEFrom: 1, CAETo: 5000, CAEExpires: day(2028, 11, 30), VerifyURL: "https://example.test/qr?x=1&y=2", TotalMinor: 122050, Currency: "UYU",
		Addendum: "onceflow payment D-4-abc invoice", IssueDate: day(2026, 11, 30),
	}
	r, err := parseAnswer(opQuery, []byte(soapAnswer(opQuery, retornoXML("ConsultaCFERetorno", 0, want))))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, "http://invoicy.test", 0)
	got, err := c.helds(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("helds\n got %+v\nwant %+v", got, want)
	}
}

func TestHeldStatusAndMalformed(t *testing.T) {
	t.Parallel()
	def := newTestClient(t, "http://invoicy.test", 0)
	custom, err := New(Config{BaseURL: "http://x", EmpCodigo: "a", EmpPK: "b", AccessKey: "c",
		StatusMap: map[string]fiscal.Status{"9": fiscal.StatusPendingDGI, "8": fiscal.StatusObserved}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	statuses := []struct {
		c    *Client
		code string
		want fiscal.Status
	}{
		{def, "1", fiscal.StatusPendingDGI}, {def, "2", fiscal.StatusPendingDGI}, {def, "4", fiscal.StatusPendingDGI},
		{def, "5", fiscal.StatusAuthorized}, {def, "7", fiscal.StatusAuthorized}, {def, "3", fiscal.StatusRejected},
		{def, "6", fiscal.StatusVoided}, {def, "9", fiscal.StatusUnknown}, {def, "", fiscal.StatusUnknown},
		{def, " 5 ", fiscal.StatusAuthorized}, {custom, "9", fiscal.StatusPendingDGI}, {custom, "5", fiscal.StatusUnknown},
		// InvoiCy's code for observed is not known: no default code means
		// it, and a configured one does.
		{def, "8", fiscal.StatusUnknown}, {custom, "8", fiscal.StatusObserved},
	}
	for _, s := range statuses {
		h, err := s.c.held(cfeResult{Tipo: "101", Status: s.code})
		if err != nil || h.Status != s.want {
			t.Errorf("status %q = %q, %v; want %q", s.code, h.Status, err, s.want)
		}
	}
	bad := []cfeResult{
		{Tipo: ""}, {Tipo: "e-Ticket"}, {Tipo: "101", Nro: "seven"},
		{Tipo: "101", TotMntPagar: "1220.505"}, {Tipo: "101", TotMntPagar: "-1"}, {Tipo: "101", FchEmis: "30/11/2026"},
	}
	for _, set := range []func(*cfeResult){
		func(x *cfeResult) { x.Avanzados.CAENroIni = "one" },
		func(x *cfeResult) { x.Avanzados.CAENroFin = "1e6" },
		func(x *cfeResult) { x.Avanzados.CAEFchVenc = "31/12/2028" },
	} {
		x := cfeResult{Tipo: "101"}
		set(&x)
		bad = append(bad, x)
	}
	for _, x := range bad {
		if _, err := def.held(x); err == nil {
			t.Errorf("held(%+v) accepted", x)
		}
	}
	// Total under CFEDatosAvanzados (docs/wire-invoicy.md), and a date with a time part.
	x := cfeResult{Tipo: "101", FchEmis: "2026-11-30T10:00:00"}
	x.Avanzados.TotMntPagar = "10.5"
	h, err := def.held(x)
	if err != nil || h.TotalMinor != 1050 || !h.IssueDate.Equal(day(2026, 11, 30)) {
		t.Errorf("held = %+v, %v", h, err)
	}
}
