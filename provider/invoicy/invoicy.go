// Package invoicy adapts InvoiCy Uruguay's SOAP web services (the e-invoicing
// provider) to the fiscal vocabulary: emit a CFE, look documents up by their
// deterministic reference, and list a period for the audit. The wire shape is
// docs/wire-invoicy.md.
//
// The errors of Emit separate outcomes that are definitely not acted on
// (fiscal.ErrRefused: MsgCod other than 0, HTTP 4xx, a request that could
// not be built or never left this process) from those where the provider
// may have stored the document (fiscal.ErrAmbiguous: a timeout or
// connection loss after sending, HTTP 5xx, an answer that cannot be read).
// The caller must never resend after an ambiguous outcome without first
// looking the reference up: that is what keeps a timeout from becoming a
// second invoice.
//
// The package logs nothing, and its errors carry no request or answer bodies.
package invoicy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/onceflow/onceflow/provider/fiscal"
)

// DefaultTimeout bounds one call (connect, send, wait and read) when
// Config.Timeout is zero.
const DefaultTimeout = 15 * time.Second

// Config is what the adapter needs to reach one InvoiCy branch.
type Config struct {
	// BaseURL is the InvoiCy root, e.g. https://appuypruebas.migrate.info/InvoiCy/.
	BaseURL string
	// EmpCodigo is the branch integration code.
	EmpCodigo string
	// EmpPK is the partner key.
	EmpPK string
	// AccessKey is the branch access key (ClaveAcceso); it only feeds EmpCK
	// and is never sent.
	AccessKey string
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
	// StatusMap maps CFEStatus codes to fiscal states; nil means
	// DefaultStatusMap. Codes missing from the map become StatusUnknown.
	StatusMap map[string]fiscal.Status
	// RatePerSecond bounds the calls made to InvoiCy (every operation
	// together), with bursts of up to Burst calls; zero means no limit.
	RatePerSecond float64
	// Burst is the limiter's bucket size; zero means 1.
	Burst int
}

// DefaultStatusMap returns the CFEStatus mapping of the wire contract:
// 1 imported, 2 signed, 4 sent to DGI → pending_dgi; 5 authorized,
// 7 accepted → authorized; 3 → rejected; 6 → voided.
func DefaultStatusMap() map[string]fiscal.Status {
	return map[string]fiscal.Status{
		"1": fiscal.StatusPendingDGI,
		"2": fiscal.StatusPendingDGI,
		"4": fiscal.StatusPendingDGI,
		"5": fiscal.StatusAuthorized,
		"7": fiscal.StatusAuthorized,
		"3": fiscal.StatusRejected,
		"6": fiscal.StatusVoided,
	}
}

// Client calls InvoiCy. It is safe for concurrent use.
type Client struct {
	base      string // without trailing slash
	empCodigo string
	empPK     string
	accessKey string
	timeout   time.Duration
	statuses  map[string]fiscal.Status
	hc        *http.Client
	limiter   *rate.Limiter
}

// New validates cfg and returns a Client that sends through a copy of hc
// (http.DefaultClient's settings when nil) which does not follow redirects.
// The error names the first missing or bad field.
func New(cfg Config, hc *http.Client) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invoicy config: %w", err)
	}
	c := &Client{
		base:      strings.TrimRight(cfg.BaseURL, "/"),
		empCodigo: cfg.EmpCodigo,
		empPK:     cfg.EmpPK,
		accessKey: cfg.AccessKey,
		timeout:   cfg.Timeout,
		statuses:  DefaultStatusMap(),
		limiter:   rate.NewLimiter(rate.Inf, 1),
	}
	if cfg.RatePerSecond > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(cfg.RatePerSecond), max(cfg.Burst, 1))
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if cfg.StatusMap != nil {
		c.statuses = make(map[string]fiscal.Status, len(cfg.StatusMap))
		for code, s := range cfg.StatusMap {
			c.statuses[strings.TrimSpace(code)] = s
		}
	}
	var cp http.Client
	if hc != nil {
		cp = *hc
	}
	// A redirected POST could be replayed elsewhere or turned into a GET;
	// neither is something to do silently with an invoice.
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &cp
	return c, nil
}

func (cfg Config) validate() error {
	u, err := url.Parse(cfg.BaseURL)
	switch {
	case cfg.BaseURL == "":
		return errors.New("BaseURL is required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("BaseURL %q must be an absolute http(s) URL", cfg.BaseURL)
	case cfg.EmpCodigo == "":
		return errors.New("EmpCodigo is required")
	case cfg.EmpPK == "":
		return errors.New("EmpPK is required")
	case cfg.AccessKey == "":
		return errors.New("AccessKey is required")
	case cfg.Timeout < 0:
		return fmt.Errorf("Timeout %s must not be negative", cfg.Timeout)
	case cfg.RatePerSecond < 0 || cfg.Burst < 0:
		return errors.New("RatePerSecond and Burst must not be negative")
	}
	for code, s := range cfg.StatusMap {
		if strings.TrimSpace(code) == "" || s == "" {
			return fmt.Errorf("StatusMap entry %q → %q: code and status are required", code, s)
		}
	}
	return nil
}

// Idempotent reports false: InvoiCy does not deduplicate a resend by
// reference, so after an ambiguous send the emission loop waits a settle
// window and looks the reference up before sending again.
func (c *Client) Idempotent() bool { return false }

// Emit sends doc with EnvioCFE and returns the document as the provider now
// holds it. doc.Reference travels as CFENumReferencia and doc.Addendum as
// CFEAdenda. An invalid document is fiscal.ErrRefused without any request.
// A status code missing from the status map yields fiscal.StatusUnknown, not
// an error. Errors wrap fiscal.ErrRefused or fiscal.ErrAmbiguous (see there).
func (c *Client) Emit(ctx context.Context, doc fiscal.Document) (fiscal.Held, error) {
	if err := doc.Validate(); err != nil {
		return fiscal.Held{}, fmt.Errorf("invoicy emit: %w: %w", fiscal.ErrRefused, err)
	}
	payload, err := c.envioCFE(doc)
	if err != nil {
		return fiscal.Held{}, fmt.Errorf("invoicy emit %s: %w: %w", doc.Reference, fiscal.ErrRefused, err)
	}
	ret, err := c.call(ctx, opEmit, payload)
	if err != nil {
		return fiscal.Held{}, fmt.Errorf("invoicy emit %s: %w", doc.Reference, err)
	}
	held, err := c.helds(ret)
	if err != nil {
		return fiscal.Held{}, fmt.Errorf("invoicy emit %s: %w: %w", doc.Reference, fiscal.ErrAmbiguous, err)
	}
	var found []fiscal.Held
	for _, h := range held {
		if h.Reference == doc.Reference {
			found = append(found, h)
		}
	}
	if len(found) != 1 {
		return fiscal.Held{}, fmt.Errorf("invoicy emit %s: %w: answer lists %d documents, %d with our reference",
			doc.Reference, fiscal.ErrAmbiguous, len(held), len(found))
	}
	return found[0], nil
}

// Lookup returns every document the provider holds under reference
// (ConsultaCFE by CFEsEspecificos/CFENumReferencia), nil when there is none.
// The documents are returned as found, even those that are not ours; see
// fiscal.Classify. Any error means the look-up failed and says nothing about
// what is held: never send on a failed look-up.
func (c *Client) Lookup(ctx context.Context, reference string) ([]fiscal.Held, error) {
	if !fiscal.ValidReference(reference) {
		return nil, fmt.Errorf("invoicy lookup: %w: malformed reference %q", fiscal.ErrRefused, reference)
	}
	f := filtros{Especificos: &especificos{Items: []especificoItem{{NumReferencia: reference}}}}
	held, err := c.consulta(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("invoicy lookup %s: %w", reference, err)
	}
	return held, nil
}

// LookupReferences returns every document the provider holds under any of
// references, in one ConsultaCFE with one CFEsEspecificos item each; nil
// when it holds none. Any error means the look-up failed and says nothing
// about what is held.
func (c *Client) LookupReferences(ctx context.Context, references []string) ([]fiscal.Held, error) {
	items := make([]especificoItem, 0, len(references))
	for _, ref := range references {
		if !fiscal.ValidReference(ref) {
			return nil, fmt.Errorf("invoicy lookup: %w: malformed reference %q", fiscal.ErrRefused, ref)
		}
		items = append(items, especificoItem{NumReferencia: ref})
	}
	if len(items) == 0 {
		return nil, nil
	}
	held, err := c.consulta(ctx, filtros{Especificos: &especificos{Items: items}})
	if err != nil {
		return nil, fmt.Errorf("invoicy lookup of %d references: %w", len(items), err)
	}
	return held, nil
}

// ListPeriod returns every document issued from one calendar day to another,
// both inclusive (ConsultaCFE by FechaIni/FechaFin; each date taken in its own
// location). Any error means the list is unknown.
func (c *Client) ListPeriod(ctx context.Context, from, to time.Time) ([]fiscal.Held, error) {
	f := filtros{FechaIni: from.Format(dateLayout), FechaFin: to.Format(dateLayout)}
	if f.FechaFin < f.FechaIni {
		return nil, fmt.Errorf("invoicy list %s..%s: %w: period ends before it starts", f.FechaIni, f.FechaFin, fiscal.ErrRefused)
	}
	held, err := c.consulta(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("invoicy list %s..%s: %w", f.FechaIni, f.FechaFin, err)
	}
	return held, nil
}

// ListNumbers returns the documents of type typ issued on day whose
// number is from first to last, both inclusive, in any series (ConsultaCFE
// by TipoCFE, FechaIni = FechaFin and CFEsFaixa): a slice of a day too
// large to list in one answer. Any error means the slice is unknown.
func (c *Client) ListNumbers(ctx context.Context, day time.Time, typ fiscal.CFEType, first, last int64) ([]fiscal.Held, error) {
	date := day.Format(dateLayout)
	if first < 1 || last < first {
		return nil, fmt.Errorf("invoicy list %s type %d numbers %d..%d: %w: want 1 <= first <= last", date, typ, first, last, fiscal.ErrRefused)
	}
	f := filtros{TipoCFE: strconv.Itoa(int(typ)), FechaIni: date, FechaFin: date, Faixa: &faixa{NroIni: first, NroFin: last}}
	held, err := c.consulta(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("invoicy list %s type %d numbers %d..%d: %w", date, typ, first, last, err)
	}
	return held, nil
}

func (c *Client) consulta(ctx context.Context, f filtros) ([]fiscal.Held, error) {
	payload, err := c.consultaCFE(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", fiscal.ErrRefused, err)
	}
	ret, err := c.call(ctx, opQuery, payload)
	if err != nil {
		return nil, err
	}
	held, err := c.helds(ret)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", fiscal.ErrAmbiguous, err)
	}
	return held, nil
}
