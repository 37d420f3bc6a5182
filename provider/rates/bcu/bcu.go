// Package bcu reads exchange rates and the Unidad Indexada from the Banco
// Central del Uruguay's published SOAP service awsbcucotizaciones
// (docs/cfe.md, "Exchange rates and the UI").
//
// A foreign currency's rate on a date is BCU's closing buyer rate (TCC) of
// the last business day before it, as Uruguay's tax rules take it; the UI's
// value on a date is the one BCU publishes for that date. The package logs
// nothing.
package bcu

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/onceflow/onceflow/provider/rates"
)

// DefaultURL is BCU's endpoint.
const DefaultURL = "https://cotizaciones.bcu.gub.uy/wscotizaciones/servlet/awsbcucotizaciones"

// soapAction is the operation's SOAPAction header.
const soapAction = "Cotizaaction/AWSBCUCOTIZACIONES.Execute"

// lookback is how many days before a date are asked for its rate, enough
// to cross a long weekend and a holiday.
const lookback = 10

// Codes maps ISO 4217 codes to BCU's currency codes: the US dollar is the
// interbank "billete" rate (2225), the UI is 9800.
var Codes = map[string]int{"USD": 2225, "EUR": 1111, "BRL": 1001, "ARS": 501, rates.UI: 9800}

// Client asks BCU. It is safe for concurrent use.
type Client struct {
	url string
	hc  *http.Client
}

// New returns a client of the service at url (DefaultURL when empty)
// through hc (http.DefaultClient when nil; give it a timeout).
func New(url string, hc *http.Client) *Client {
	if url == "" {
		url = DefaultURL
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{url: url, hc: hc}
}

// Rate implements rates.Source: ErrMissing for a code BCU does not quote
// or a date it has no value for.
func (c *Client) Rate(ctx context.Context, code string, day time.Time) (*big.Rat, error) {
	bcuCode, ok := Codes[code]
	if !ok {
		return nil, fmt.Errorf("bcu: %s: %w", code, rates.ErrMissing)
	}
	d := rates.Day(day)
	from, to := d.AddDate(0, 0, -lookback), d.AddDate(0, 0, -1)
	if code == rates.UI {
		from, to = d, d
	}
	quotes, err := c.quotes(ctx, bcuCode, from, to)
	if err != nil {
		return nil, fmt.Errorf("bcu %s on %s: %w", code, d.Format(time.DateOnly), err)
	}
	var best *quote
	for i, q := range quotes {
		if q.Moneda == bcuCode && !q.day.After(to) && (best == nil || q.day.After(best.day)) {
			best = &quotes[i]
		}
	}
	if best == nil {
		return nil, fmt.Errorf("bcu %s on %s: %w", code, d.Format(time.DateOnly), rates.ErrMissing)
	}
	return best.tcc, nil
}

// quote is one dato of an answer.
type quote struct {
	Fecha  string `xml:"Fecha"`
	Moneda int    `xml:"Moneda"`
	TCC    string `xml:"TCC"`
	day    time.Time
	tcc    *big.Rat
}

// answer is the SOAP envelope BCU answers, matched by local names.
type answer struct {
	Salida struct {
		Status struct {
			Status      int    `xml:"status"`
			CodigoError int    `xml:"codigoerror"`
			Mensaje     string `xml:"mensaje"`
		} `xml:"respuestastatus"`
		Datos []quote `xml:"datoscotizaciones>datoscotizaciones.dato"`
	} `xml:"Body>wsbcucotizaciones.ExecuteResponse>Salida"`
}

// quotes asks BCU for code's values from one date to another.
func (c *Client) quotes(ctx context.Context, code int, from, to time.Time) ([]quote, error) {
	body := fmt.Sprintf(`<?xml version="1.0" encoding="utf-8"?>`+
		`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:cot="Cotiza"><soapenv:Body>`+
		`<cot:wsbcucotizaciones.Execute><cot:Entrada><cot:Moneda><cot:item>%d</cot:item></cot:Moneda>`+
		`<cot:FechaDesde>%s</cot:FechaDesde><cot:FechaHasta>%s</cot:FechaHasta><cot:Grupo>0</cot:Grupo>`+
		`</cot:Entrada></cot:wsbcucotizaciones.Execute></soapenv:Body></soapenv:Envelope>`,
		code, from.Format(time.DateOnly), to.Format(time.DateOnly))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", soapAction)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var a answer
	if err := xml.NewDecoder(bytes.NewReader(raw)).Decode(&a); err != nil {
		return nil, fmt.Errorf("unreadable answer: %w", err)
	}
	if st := a.Salida.Status; st.Status != 1 {
		if st.Status == 0 && st.CodigoError != 0 && len(a.Salida.Datos) <= 1 && noValue(a.Salida.Datos) {
			// BCU answers an error status (e.g. no quotes in the period)
			// with one empty row.
			return nil, fmt.Errorf("BCU error %d (%s): %w", st.CodigoError, st.Mensaje, rates.ErrMissing)
		}
		return nil, fmt.Errorf("BCU status %d, error %d: %s", st.Status, st.CodigoError, st.Mensaje)
	}
	return parse(a.Salida.Datos)
}

// noValue reports whether rows carry no positive rate.
func noValue(rows []quote) bool {
	for _, q := range rows {
		if v, ok := new(big.Rat).SetString(strings.TrimSpace(q.TCC)); ok && v.Sign() > 0 {
			return false
		}
	}
	return true
}

// parse reads each row's date and TCC; rows without a positive rate are
// skipped.
func parse(rows []quote) ([]quote, error) {
	out := rows[:0]
	for _, q := range rows {
		v, ok := new(big.Rat).SetString(strings.TrimSpace(q.TCC))
		if !ok || v.Sign() <= 0 {
			continue
		}
		day, err := time.Parse(time.DateOnly, strings.TrimSpace(q.Fecha))
		if err != nil {
			return nil, errors.New("unreadable answer: Fecha " + q.Fecha)
		}
		q.day, q.tcc = day, v
		out = append(out, q)
	}
	return out, nil
}
