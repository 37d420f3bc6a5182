package httpapi

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"
)

// decodeLikeBind applies bind's checks to body without an HTTP request.
func decodeLikeBind(body []byte, v any) bool {
	if !utf8.Valid(body) || hasEscapedNUL(body) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v) == nil
}

// FuzzCustomer validates fuzzed customer JSON: a customer that passes holds
// only text PostgreSQL stores, within the CFE's lengths.
func FuzzCustomer(f *testing.F) {
	f.Add([]byte(`{"doc_type":"RUT","doc_country":"UY","doc_number":"211003420017","legal_name":"Acme SA","address":"Calle 1","city":"Montevideo"}`))
	f.Add([]byte(`{"doc_type":"ci","doc_country":"uy","doc_number":"1.234.567-2","legal_name":"Someone Else","email":"a@example.com"}`))
	f.Add([]byte(`{"doc_type":"PASSPORT","doc_country":"AR","doc_number":"AB-123","legal_name":"José \u00e9"}`))
	f.Add([]byte("{\"doc_type\":\"CI\",\"legal_name\":\"Jos\xe9\"}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in Customer
		if !decodeLikeBind(body, &in) {
			return
		}
		in.normalize()
		if len(in.validate()) != 0 {
			return
		}
		for name, s := range map[string]string{"doc_type": in.DocType, "doc_country": in.DocCountry, "doc_number": in.DocNumber,
			"legal_name": in.LegalName, "address": in.Address, "city": in.City, "department": in.Department, "country": in.Country, "email": in.Email} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Fatalf("%s: accepted text PostgreSQL refuses: %q", name, s)
			}
			if m, ok := maxLen[name]; ok && utf8.RuneCountInString(s) > m {
				t.Fatalf("%s: accepted %d characters, the CFE allows %d", name, utf8.RuneCountInString(s), m)
			}
		}
	})
}

// FuzzOrder validates fuzzed order JSON: an order that passes has lines
// whose products and sum are exact (computed without overflow) and equal
// the amount.
func FuzzOrder(f *testing.F) {
	f.Add([]byte(`{"merchant_order_id":"o-1","customer_id":"00000000-0000-4000-8000-000000000000","amount_minor":30,"currency":"UYU",` +
		`"lines":[{"description":"a","quantity":3,"unit_minor":10,"amount_minor":30}]}`))
	f.Add([]byte(`{"merchant_order_id":"o-wrap","amount_minor":99,"currency":"UYU","lines":[` +
		`{"description":"a","quantity":2,"unit_minor":4611686018427387954,"amount_minor":-9223372036854775708},` +
		`{"description":"b","quantity":1,"unit_minor":9223372036854775807,"amount_minor":9223372036854775807}]}`))
	f.Add([]byte(`{"merchant_order_id":"o-2","amount_minor":100,"currency":"UYU"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var in Order
		if !decodeLikeBind(body, &in) || len(validateOrder(in)) != 0 {
			return
		}
		sum := new(big.Int)
		for i, l := range in.Lines {
			p := new(big.Int).Mul(big.NewInt(l.Quantity), big.NewInt(l.UnitMinor))
			if p.Cmp(big.NewInt(l.AmountMinor)) != 0 {
				t.Fatalf("line %d: %d × %d is %s, accepted as %d", i, l.Quantity, l.UnitMinor, p, l.AmountMinor)
			}
			if l.VAT == "not_billable_negative" {
				p.Neg(p)
			}
			sum.Add(sum, p)
		}
		if len(in.Lines) > 0 && sum.Cmp(big.NewInt(in.AmountMinor)) != 0 {
			t.Fatalf("lines add up to %s, accepted as %d", sum, in.AmountMinor)
		}
	})
}
