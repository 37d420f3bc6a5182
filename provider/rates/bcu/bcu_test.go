package bcu

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/provider/rates"
)

// request is what the fake reads of a call, by local names.
type request struct {
	Entrada struct {
		Items []int  `xml:"Moneda>item"`
		Desde string `xml:"FechaDesde"`
		Hasta string `xml:"FechaHasta"`
		Grupo string `xml:"Grupo"`
	} `xml:"Body>wsbcucotizaciones.Execute>Entrada"`
}

// fakeBCU answers in BCU's published shape from rows "code,date,tcc",
// returning those in the asked period, or BCU's error row when none is.
func fakeBCU(t *testing.T, rows []string, seen *[]request) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("SOAPAction") != soapAction {
			http.Error(w, "bad SOAPAction", http.StatusBadRequest)
			return
		}
		var req request
		if err := xml.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.Entrada.Items) != 1 {
			http.Error(w, "want one Moneda item", http.StatusBadRequest)
			return
		}
		*seen = append(*seen, req)
		var datos strings.Builder
		for _, row := range rows {
			f := strings.Split(row, ",")
			if f[0] == fmt.Sprint(req.Entrada.Items[0]) && f[1] >= req.Entrada.Desde && f[1] <= req.Entrada.Hasta {
				fmt.Fprintf(&datos, `<datoscotizaciones.dato><Fecha>%s</Fecha><Moneda>%s</Moneda><Nombre>X</Nombre>`+
					`<CodigoISO>USD</CodigoISO><Emisor/><TCC>%s</TCC><TCV>%s</TCV><ArbAct>1</ArbAct><FormaArbitrar>0</FormaArbitrar></datoscotizaciones.dato>`,
					f[1], f[0], f[2], f[2])
			}
		}
		status := `<status>1</status><codigoerror>0</codigoerror><mensaje/>`
		if datos.Len() == 0 {
			status = `<status>0</status><codigoerror>100</codigoerror><mensaje>No existe cotizacion</mensaje>`
			datos.WriteString(`<datoscotizaciones.dato><Fecha xsi:nil="true"/><Moneda>0</Moneda><TCC>0.000000</TCC><TCV>0.000000</TCV></datoscotizaciones.dato>`)
		}
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" `+
			`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><SOAP-ENV:Body><wsbcucotizaciones.ExecuteResponse xmlns="Cotiza">`+
			`<Salida><respuestastatus>%s</respuestastatus><datoscotizaciones>%s</datoscotizaciones></Salida>`+
			`</wsbcucotizaciones.ExecuteResponse></SOAP-ENV:Body></SOAP-ENV:Envelope>`, status, datos.String())
	}))
}

func TestRateIsThePreviousBusinessDaysClose(t *testing.T) {
	var seen []request
	srv := fakeBCU(t, []string{"2225,2026-11-26,40.100000", "2225,2026-11-27,40.182500", "2225,2026-11-30,40.500000",
		"9800,2026-11-30,6.412300"}, &seen)
	defer srv.Close()
	c := New(srv.URL, srv.Client())
	ctx := context.Background()
	// Monday 30 November: Friday's close, not Monday's own.
	v, err := c.Rate(ctx, "USD", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	if err != nil || rates.Thousandths(v) != 40183 {
		t.Fatalf("USD = %v, %v; want 40.1825 → 40.183", v, err)
	}
	if e := seen[0].Entrada; e.Items[0] != 2225 || e.Desde != "2026-11-20" || e.Hasta != "2026-11-29" || e.Grupo != "0" {
		t.Fatalf("request %+v", e)
	}
	ui, err := c.Rate(ctx, rates.UI, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	if err != nil || ui.FloatString(4) != "6.4123" {
		t.Fatalf("UI = %v, %v", ui, err)
	}
	if _, err := c.Rate(ctx, "USD", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, rates.ErrMissing) {
		t.Fatalf("no quotes in the period: %v, want ErrMissing", err)
	}
	if _, err := c.Rate(ctx, "JPY", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)); !errors.Is(err, rates.ErrMissing) {
		t.Fatalf("unquoted currency: %v, want ErrMissing", err)
	}
}

func TestUnreachableIsNotMissing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := New(srv.URL, srv.Client()).Rate(context.Background(), "USD", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	if err == nil || errors.Is(err, rates.ErrMissing) {
		t.Fatalf("HTTP 503 = %v, want an error other than ErrMissing", err)
	}
}
