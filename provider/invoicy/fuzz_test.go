package invoicy

import (
	"errors"
	"strings"
	"testing"

	"github.com/onceflow/onceflow/provider/fiscal"
)

// FuzzParseAnswer reads fuzzed SOAP answers to both operations: no panic,
// every error exactly one of ambiguous or refused, and the documents of an
// accepted answer converted without a panic.
func FuzzParseAnswer(f *testing.F) {
	ret := `<EnvioCFERetorno><Encabezado><MsgCod>0</MsgCod></Encabezado><ListaCFE><CFE><CFETipo>101</CFETipo>` +
		`<CFENro>7</CFENro><CFEStatus>5</CFEStatus><CFENumReferencia>42</CFENumReferencia><CFETotMntPagar>1220.50</CFETotMntPagar>` +
		`<CFEFchEmis>2026-11-30</CFEFchEmis></CFE></ListaCFE></EnvioCFERetorno>`
	escaped := strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(ret)
	for _, seed := range []string{
		soapAnswer(opEmit, ret),
		`<Envelope><Body><Xmlretorno><![CDATA[` + ret + `]]></Xmlretorno></Body></Envelope>`,
		`<Envelope><Body><Xmlretorno>` + ret + `</Xmlretorno></Body></Envelope>`,
		`<?xml version="1.0" encoding="ISO-8859-1"?><Envelope><Body><Xmlretorno>` + escaped + `</Xmlretorno></Body></Envelope>`,
		`<Envelope><Body><Fault><faultcode>Server</faultcode><faultstring>boom</faultstring></Fault></Body></Envelope>`,
		soapAnswer(opQuery, retornoXML("ConsultaCFERetorno", 0)),
		soapAnswer(opEmit, retornoXML("EnvioCFERetorno", 1)),
		"\x00\x01garbage",
	} {
		f.Add([]byte(seed), false)
	}
	c := newTestClient(f, "http://127.0.0.1:1", 1)
	f.Fuzz(func(t *testing.T, answer []byte, query bool) {
		op := opEmit
		if query {
			op = opQuery
		}
		r, err := parseAnswer(op, answer)
		if err != nil {
			if errors.Is(err, fiscal.ErrAmbiguous) == errors.Is(err, fiscal.ErrRefused) {
				t.Fatalf("error %v must be exactly one of ambiguous or refused", err)
			}
			return
		}
		_, _ = c.helds(r)
	})
}
