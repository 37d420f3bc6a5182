// Package fiscal is the vocabulary of Uruguayan fiscal documents (CFE) as the
// invoicer sees them: document kinds and DGI type codes, emission states, the
// document we send, the document a provider holds, the deterministic
// reference that makes a send idempotent, and exact decimal money.
//
// It is pure Go with no I/O; provider adapters translate these types to and
// from their wire formats.
package fiscal

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/pkg/taxid"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
)

// Kind is what a fiscal document does for its source: an invoice for a
// payment or a credit note for a refund.
type Kind string

// Document kinds.
const (
	KindInvoice    Kind = "invoice"
	KindCreditNote Kind = "credit_note"
)

// CFEType is DGI's numeric code for a type of electronic fiscal document.
type CFEType int

// CFE type codes used by onceflow (DGI code list; see docs/cfe.md, "Types").
const (
	ETicket            CFEType = 101
	ETicketCreditNote  CFEType = 102
	EFactura           CFEType = 111
	EFacturaCreditNote CFEType = 112
)

// TypeFor returns the CFE type of a document of the given kind for buyer: an
// e-Factura (111) or its credit note (112) when the buyer is identified by a
// valid RUT, otherwise an e-Ticket (101) or its credit note (102). Any kind
// other than KindCreditNote yields an invoice type.
func TypeFor(buyer Buyer, kind Kind) CFEType {
	factura := strings.EqualFold(strings.TrimSpace(buyer.DocType), DocRUT) && taxid.ValidRUT(buyer.Number)
	switch {
	case factura && kind == KindCreditNote:
		return EFacturaCreditNote
	case factura:
		return EFactura
	case kind == KindCreditNote:
		return ETicketCreditNote
	default:
		return ETicket
	}
}

// IsCreditNote reports whether t is a credit note type (102 or 112).
func (t CFEType) IsCreditNote() bool {
	return t == ETicketCreditNote || t == EFacturaCreditNote
}

// Known reports whether t is one of the four types onceflow emits.
func (t CFEType) Known() bool {
	switch t {
	case ETicket, ETicketCreditNote, EFactura, EFacturaCreditNote:
		return true
	}
	return false
}

// Status is the emission state of a fiscal document.
type Status string

// Emission states.
const (
	// StatusPending: recorded locally, not yet sent to the provider.
	StatusPending Status = "pending"
	// StatusPendingDGI: the provider holds it, DGI has not answered yet.
	StatusPendingDGI Status = "pending_dgi"
	// StatusAuthorized: accepted by DGI.
	StatusAuthorized Status = "authorized"
	// StatusObserved: accepted by DGI with remarks ("observado"): valid
	// for the buyer like an authorized document, kept apart so operators
	// see the remarks.
	StatusObserved Status = "observed"
	// StatusIssued: a small e-Ticket that DGI only sees in the daily report,
	// considered issued after enough polls without an individual answer.
	StatusIssued Status = "issued"
	// StatusRejected: rejected by the provider or DGI.
	StatusRejected Status = "rejected"
	// StatusVoided: voided (anulado) at the provider.
	StatusVoided Status = "voided"
	// StatusUnknown: a send whose outcome is not known; look it up later.
	StatusUnknown Status = "unknown"
	// StatusNeedsAttention: cannot be resolved automatically; an operator
	// decides.
	StatusNeedsAttention Status = "needs_attention"
)

// Statuses lists every document status, those with work ahead first, then
// the final ones: the order operators see them in.
var Statuses = []Status{StatusPending, StatusUnknown, StatusPendingDGI, StatusNeedsAttention,
	StatusAuthorized, StatusObserved, StatusIssued, StatusRejected, StatusVoided}

// Final reports whether s is an end state that neither the provider nor the
// emission loop will change: authorized, observed, issued, rejected or
// voided.
// StatusNeedsAttention is not final: it is parked until an operator moves it
// on, and it is never retried automatically.
func (s Status) Final() bool {
	switch s {
	case StatusAuthorized, StatusObserved, StatusIssued, StatusRejected, StatusVoided:
		return true
	}
	return false
}

// Valid reports whether a document in state s is valid for its buyer:
// authorized, observed (accepted with remarks) or issued.
func (s Status) Valid() bool {
	return s == StatusAuthorized || s == StatusObserved || s == StatusIssued
}

// Buyer document types accepted in Buyer.DocType.
const (
	DocRUT      = "RUT"
	DocCI       = "CI"
	DocPassport = "PASSPORT"
	DocOther    = "OTHER"
)

// Buyer is the receiver of a fiscal document. A zero Buyer (empty DocType) is
// an anonymous final consumer, allowed on small e-Tickets.
type Buyer struct {
	DocType    string // DocRUT, DocCI, DocPassport, DocOther or empty
	Country    string // ISO 3166 alpha-2, e.g. "UY"
	Number     string
	Name       string
	Address    string
	City       string
	Department string
	Email      string
}

// Line is one item of a document, amounts in minor units (cents), VAT
// included.
type Line struct {
	Description string
	Quantity    int64
	UnitMinor   int64
	AmountMinor int64
	// VAT is the line's VAT indicator; zero (lines recorded before lines
	// carried one) is the basic rate.
	VAT vat.Indicator `json:",omitempty"`
}

// Indicator is l's VAT indicator, the basic rate when none is set.
func (l Line) Indicator() vat.Indicator {
	if l.VAT == 0 {
		return vat.Basic
	}
	return l.VAT
}

// OriginalRef identifies the document a credit note corrects.
type OriginalRef struct {
	Type   CFEType
	Series string
	Number int64
	Date   time.Time
}

// Document is a fiscal document as onceflow sends it to the provider.
// Amounts are minor units (cents) of Currency; IssueDate is rendered as a
// calendar date in its own location.
type Document struct {
	Reference  string // see Reference
	Type       CFEType
	IssueDate  time.Time
	Currency   string // ISO 4217, e.g. "UYU"
	TotalMinor int64
	Buyer      Buyer
	Lines      []Line
	Original   *OriginalRef // required on credit notes, nil otherwise
	Addendum   string       // see Addendum
	// Rates are the VAT rates in force on IssueDate; zero means
	// vat.DefaultSchedule's.
	Rates vat.Rates
	// ExchangeRate is TpoCambio, UYU per unit of Currency in thousandths
	// (38431 is 38.431): required unless Currency is UYU, zero then.
	ExchangeRate int64
	// Threshold places an e-Ticket or its credit note against the
	// e-Ticket threshold in UI (DailySummary.Place); InvoiCy's CFEAcimaUI.
	// Above it the buyer must be identified. e-Facturas leave it unknown.
	Threshold Threshold
}

// Threshold is where an e-Ticket's amount excluding VAT stands against the
// e-Ticket threshold in UI on its date.
type Threshold int

// Threshold values.
const (
	// ThresholdUnknown: not evaluated (an e-Factura, or no UI value or
	// exchange rate for the date); nothing is said to the provider.
	ThresholdUnknown Threshold = iota
	// ThresholdAtOrUnder: at or under the threshold; the buyer may stay
	// anonymous.
	ThresholdAtOrUnder
	// ThresholdAbove: above the threshold; the buyer must be identified.
	ThresholdAbove
)

// Totals returns DGI's totals of d's lines (prices include VAT).
func (d Document) Totals() (vat.Totals, error) {
	lines := make([]vat.Line, len(d.Lines))
	for i, l := range d.Lines {
		lines[i] = vat.Line{Indicator: l.Indicator(), AmountMinor: l.AmountMinor}
	}
	return vat.Compute(lines, d.VATRates(), true)
}

// VATRates are d.Rates, or vat.DefaultSchedule's on d.IssueDate when unset.
func (d Document) VATRates() vat.Rates {
	if d.Rates != (vat.Rates{}) {
		return d.Rates
	}
	r, _ := vat.DefaultSchedule().At(d.IssueDate)
	return r
}

// ErrInvalidDocument is wrapped by every error Document.Validate returns.
var ErrInvalidDocument = errors.New("invalid fiscal document")

// Validate checks that d can be sent: a well-formed reference, a known type,
// a currency, non-negative amounts (each line quantity × unit = amount, lines
// adding up to the total), a known
// buyer document type (a RUT buyer on e-Facturas, an identified buyer on
// an e-Ticket above the UI threshold) and an original reference
// exactly on credit notes. Errors wrap ErrInvalidDocument.
func (d Document) Validate() error {
	if err := d.validate(); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalidDocument, err)
	}
	return nil
}

func (d Document) validate() error {
	if !ValidReference(d.Reference) {
		return errors.New("reference must be 1 to 18 digits without a leading zero")
	}
	if !d.Type.Known() {
		return fmt.Errorf("unsupported CFE type %d", d.Type)
	}
	if d.IssueDate.IsZero() {
		return errors.New("issue date missing")
	}
	if len(d.Currency) != 3 || strings.ToUpper(d.Currency) != d.Currency {
		return errors.New("currency must be a 3-letter upper-case ISO 4217 code")
	}
	if err := d.validateAmounts(); err != nil {
		return err
	}
	switch {
	case d.Currency == "UYU" && d.ExchangeRate != 0:
		return errors.New("a document in UYU carries no exchange rate")
	case d.Currency != "UYU" && (d.ExchangeRate <= 0 || d.ExchangeRate > MaxExchangeRate):
		return fmt.Errorf("a document in %s needs an exchange rate from 0.001 to 9999.999", d.Currency)
	}
	if err := d.validateBuyer(); err != nil {
		return err
	}
	if d.Type.IsCreditNote() != (d.Original != nil) {
		return errors.New("credit notes, and only they, carry the original document")
	}
	return nil
}

func (d Document) validateAmounts() error {
	if d.TotalMinor < 0 {
		return errors.New("total is negative")
	}
	if len(d.Lines) == 0 {
		return errors.New("no lines")
	}
	for i, l := range d.Lines {
		if l.Quantity <= 0 || l.UnitMinor < 0 || l.AmountMinor < 0 {
			return fmt.Errorf("line %d: quantity must be positive and amounts non-negative", i+1)
		}
		if l.UnitMinor != 0 && l.Quantity > math.MaxInt64/l.UnitMinor || l.Quantity*l.UnitMinor != l.AmountMinor {
			return fmt.Errorf("line %d: quantity times unit price is not the line amount", i+1)
		}
		if strings.TrimSpace(l.Description) == "" {
			return fmt.Errorf("line %d: description missing", i+1)
		}
		if !l.Indicator().Valid() {
			return fmt.Errorf("line %d: unknown VAT indicator %d", i+1, l.VAT)
		}
	}
	t, err := d.Totals()
	if err != nil {
		return err
	}
	if t.Pay != d.TotalMinor {
		return fmt.Errorf("lines add up to %s, total is %s", money.FormatMinor(t.Pay), money.FormatMinor(d.TotalMinor))
	}
	return nil
}

// MaxExchangeRate is the largest TpoCambio DGI's schema admits, 9999.999,
// in thousandths.
const MaxExchangeRate = 9_999_999

func (d Document) validateBuyer() error {
	switch strings.ToUpper(strings.TrimSpace(d.Buyer.DocType)) {
	case "", DocRUT, DocCI, DocPassport, DocOther:
	default:
		return fmt.Errorf("unknown buyer document type %q", d.Buyer.DocType)
	}
	factura := d.Type == EFactura || d.Type == EFacturaCreditNote
	switch {
	case factura && TypeFor(d.Buyer, KindInvoice) != EFactura:
		return errors.New("an e-Factura needs a buyer with a valid RUT")
	case factura && d.Threshold != ThresholdUnknown:
		return errors.New("only e-Tickets are placed against the UI threshold")
	case d.Threshold == ThresholdAbove && !d.Buyer.Identified():
		return errors.New("an e-Ticket above the UI threshold needs an identified buyer (document type, number and, outside RUT and CI, country)")
	}
	return nil
}

// Identified reports whether b names its buyer as DGI requires above the
// e-Ticket threshold: a document type and number, and a country unless
// the document is a RUT or a CI (which are Uruguayan).
func (b Buyer) Identified() bool {
	t := strings.ToUpper(strings.TrimSpace(b.DocType))
	return t != "" && strings.TrimSpace(b.Number) != "" &&
		(t == DocRUT || t == DocCI || strings.TrimSpace(b.Country) != "")
}

// Held is a fiscal document as the provider holds it.
type Held struct {
	Reference      string
	Type           CFEType
	Series         string
	Number         int64
	Status         Status // mapped from ProviderStatus; StatusUnknown when unmapped
	ProviderStatus string // the provider's raw status code
	SecurityCode   string
	CAEID          string
	CAEFrom        int64     // first number of the CAE's authorized range (CFECAENroIni); 0 when not told
	CAETo          int64     // last number of the CAE's authorized range (CFECAENroFin); 0 when not told
	CAEExpires     time.Time // the CAE's expiry date (CFECAEFchVenc); zero when not told
	VerifyURL      string    // the DGI verification link the QR code encodes (CFEQrCode)
	TotalMinor     int64
	Currency       string
	Addendum       string
	IssueDate      time.Time
}

// FormatExchangeRate renders an exchange rate in thousandths as TpoCambio:
// 38431 → "38.431".
func FormatExchangeRate(milli int64) string {
	return fmt.Sprintf("%d.%03d", milli/1000, milli%1000)
}
