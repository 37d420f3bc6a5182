package invoicy

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/onceflow/onceflow/provider/fiscal"
)

// maxAnswer bounds the answer read from InvoiCy (a period listing can be long).
const maxAnswer = 32 << 20

// operation is one SOAP service of the wire contract.
type operation struct {
	path   string // endpoint under the base URL
	action string // SOAPAction header value
	method string // GeneXus operation element
	param  string // string parameter carrying the business XML
	answer string // root element of the business answer
}

var (
	opEmit = operation{
		path:   "/aws_emissionfactura.aspx",
		action: `"Gxaction/AWS_EMISSIONFACTURA.Execute"`,
		method: "WS_EmissionFactura.Execute",
		param:  "Xmlrecepcao",
		answer: "EnvioCFERetorno",
	}
	opQuery = operation{
		path:   "/aws_consultafactura.aspx",
		action: `"Gxaction/AWS_CONSULTAFACTURA.Execute"`,
		method: "WS_ConsultaFactura.Execute",
		param:  "Xmlconsulta",
		answer: "ConsultaCFERetorno",
	}
)

// soapRequest wraps the business XML, escaped as text, in the SOAP envelope.
func soapRequest(op operation, payload []byte) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:gx="Gx">`)
	b.WriteString(`<soapenv:Body><gx:` + op.method + `><gx:` + op.param + `>`)
	if err := xml.EscapeText(&b, payload); err != nil {
		return nil, fmt.Errorf("escape business XML: %w", err)
	}
	b.WriteString(`</gx:` + op.param + `></gx:` + op.method + `></soapenv:Body></soapenv:Envelope>`)
	return b.Bytes(), nil
}

// call posts payload to op and returns the parsed business answer. Errors
// wrap fiscal.ErrRefused when nothing can have been acted on (and
// fiscal.ErrUnavailable too when the call never reached the provider's
// judgement) and fiscal.ErrAmbiguous otherwise.
func (c *Client) call(ctx context.Context, op operation, payload []byte) (retorno, error) {
	body, err := soapRequest(op, payload)
	if err != nil {
		return retorno{}, fmt.Errorf("%w: %w", fiscal.ErrRefused, err)
	}
	// The timeout covers the wait for the rate limiter too, so a call never
	// outlasts it and a claim that outlives two calls stays valid.
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := c.limiter.Wait(ctx); err != nil {
		return retorno{}, fmt.Errorf("%w: rate limit: %w", fiscal.ErrUnavailable, err)
	}
	// sent turns true once request bytes may have left this process; before
	// that, any failure (dial, TLS, a context already done) is a refusal.
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { sent.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+op.path, bytes.NewReader(body))
	if err != nil {
		return retorno{}, fmt.Errorf("%w: build request: %w", fiscal.ErrRefused, err)
	}
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", op.action)
	// No Idempotency-Key header on purpose: net/http would then treat the
	// POST as replayable and could resend it on a broken keep-alive
	// connection after it was written.
	resp, err := c.hc.Do(req)
	if err != nil {
		if sent.Load() {
			return retorno{}, fmt.Errorf("%w: %w", fiscal.ErrAmbiguous, err)
		}
		return retorno{}, fmt.Errorf("%w: not sent: %w", fiscal.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Only a 4xx that proves nothing was done is a refusal; 408, 5xx
		// and anything else we cannot read as one are ambiguous.
		return retorno{}, fmt.Errorf("%w: HTTP %d", fiscal.StatusOutcome(resp.StatusCode), resp.StatusCode)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return retorno{}, fmt.Errorf("%w: reading answer: %w", fiscal.ErrAmbiguous, err)
	}
	if len(answer) > maxAnswer {
		return retorno{}, fmt.Errorf("%w: answer larger than %d bytes", fiscal.ErrAmbiguous, maxAnswer)
	}
	return parseAnswer(op, answer)
}

// parseAnswer reads a 2xx SOAP answer: unparseable is ambiguous, a MsgCod
// other than 0 is a refusal.
func parseAnswer(op operation, answer []byte) (retorno, error) {
	inner, err := xmlRetorno(answer)
	if err != nil {
		return retorno{}, fmt.Errorf("%w: %w", fiscal.ErrAmbiguous, err)
	}
	var r retorno
	d := xml.NewDecoder(strings.NewReader(inner))
	// The text was already decoded with the envelope; a declared charset
	// inside it no longer applies.
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	if err := d.Decode(&r); err != nil {
		return retorno{}, fmt.Errorf("%w: parse Xmlretorno: %w", fiscal.ErrAmbiguous, err)
	}
	if r.XMLName.Local != op.answer {
		return retorno{}, fmt.Errorf("%w: answer root %q, want %q", fiscal.ErrAmbiguous, r.XMLName.Local, op.answer)
	}
	code, err := strconv.Atoi(strings.TrimSpace(r.Encabezado.MsgCod))
	if err != nil {
		return retorno{}, fmt.Errorf("%w: MsgCod %q is not a number", fiscal.ErrAmbiguous, clip(r.Encabezado.MsgCod))
	}
	if code != 0 {
		dsc := r.Encabezado.MsgDsc
		if dsc == "" {
			dsc = r.Encabezado.MsgDesc
		}
		return retorno{}, fmt.Errorf("%w: MsgCod %d: %s", fiscal.ErrRefused, code, clip(dsc))
	}
	return r, nil
}

// xmlRetorno returns the business XML inside the Xmlretorno element of a SOAP
// answer, matching element names in any namespace. The business XML may be
// escaped text, CDATA or (tolerated) literal child elements.
func xmlRetorno(answer []byte) (string, error) {
	d := xml.NewDecoder(bytes.NewReader(answer))
	d.CharsetReader = charsetReader
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", errors.New("no Xmlretorno in answer")
			}
			return "", fmt.Errorf("parse SOAP answer: %w", err)
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch start.Name.Local {
		case "Fault":
			var f struct {
				Code   string `xml:"faultcode"`
				String string `xml:"faultstring"`
			}
			if err := d.DecodeElement(&f, &start); err != nil {
				return "", fmt.Errorf("parse SOAP fault: %w", err)
			}
			return "", fmt.Errorf("SOAP fault %s: %s", clip(f.Code), clip(f.String))
		case "Xmlretorno":
			var v struct {
				Inner string `xml:",innerxml"`
				Text  string `xml:",chardata"`
			}
			if err := d.DecodeElement(&v, &start); err != nil {
				return "", fmt.Errorf("parse Xmlretorno: %w", err)
			}
			if strings.TrimSpace(v.Text) != "" {
				return v.Text, nil
			}
			if strings.TrimSpace(v.Inner) == "" {
				return "", errors.New("empty Xmlretorno")
			}
			return v.Inner, nil
		}
	}
}

// charsetReader accepts the encodings a SOAP answer may declare besides
// UTF-8: ISO-8859-1 (converted) and US-ASCII.
func charsetReader(charset string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1":
		raw, err := io.ReadAll(in)
		if err != nil {
			return nil, err
		}
		runes := make([]rune, len(raw))
		for i, b := range raw {
			runes[i] = rune(b)
		}
		return strings.NewReader(string(runes)), nil
	}
	return nil, fmt.Errorf("unsupported charset %q", charset)
}

// clip bounds provider-supplied text kept in error messages.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}
