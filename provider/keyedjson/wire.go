package keyedjson

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/provider/fiscal"
)

const dateLayout = "2006-01-02"

type document struct {
	Reference    string    `json:"reference"`
	Type         int       `json:"type"`
	Series       string    `json:"series,omitempty"`
	Number       int64     `json:"number,omitempty"`
	Status       string    `json:"status,omitempty"`
	IssueDate    string    `json:"issue_date"`
	Currency     string    `json:"currency"`
	Total        string    `json:"total"`
	Addendum     string    `json:"addendum"`
	CAEID        string    `json:"cae_id,omitempty"`
	CAEFrom      int64     `json:"cae_from,omitempty"`
	CAETo        int64     `json:"cae_to,omitempty"`
	CAEExpires   string    `json:"cae_expires,omitempty"`
	SecurityCode string    `json:"security_code,omitempty"`
	VerifyURL    string    `json:"verify_url,omitempty"`
	Buyer        *buyer    `json:"buyer,omitempty"`
	Lines        []line    `json:"lines,omitempty"`
	Original     *original `json:"original,omitempty"`
}

type buyer struct {
	DocType    string `json:"doc_type"`
	Country    string `json:"country"`
	Number     string `json:"number"`
	Name       string `json:"name"`
	Address    string `json:"address"`
	City       string `json:"city"`
	Department string `json:"department"`
	Email      string `json:"email"`
}

type line struct {
	Description string `json:"description"`
	Quantity    int64  `json:"quantity"`
	UnitPrice   string `json:"unit_price"`
	Amount      string `json:"amount"`
}

type original struct {
	Type   int    `json:"type"`
	Series string `json:"series"`
	Number int64  `json:"number"`
	Date   string `json:"date"`
}

// request is the emission body for doc; amounts are decimal strings.
func request(doc fiscal.Document) document {
	b := doc.Buyer
	d := document{Reference: doc.Reference, Type: int(doc.Type), IssueDate: doc.IssueDate.Format(dateLayout),
		Currency: doc.Currency, Total: money.FormatMinor(doc.TotalMinor), Addendum: doc.Addendum,
		Buyer: &buyer{DocType: b.DocType, Country: b.Country, Number: b.Number, Name: b.Name, Address: b.Address,
			City: b.City, Department: b.Department, Email: b.Email}}
	for _, l := range doc.Lines {
		d.Lines = append(d.Lines, line{Description: l.Description, Quantity: l.Quantity,
			UnitPrice: money.FormatMinor(l.UnitMinor), Amount: money.FormatMinor(l.AmountMinor)})
	}
	if o := doc.Original; o != nil {
		d.Original = &original{Type: int(o.Type), Series: o.Series, Number: o.Number, Date: o.Date.Format(dateLayout)}
	}
	return d
}

// held converts an answer; unmapped statuses become StatusUnknown.
func (c *Client) held(answer []byte) (fiscal.Held, error) {
	var d document
	if err := json.Unmarshal(answer, &d); err != nil {
		return fiscal.Held{}, fmt.Errorf("parse answer: %w", err)
	}
	h := fiscal.Held{Reference: d.Reference, Type: fiscal.CFEType(d.Type), Series: d.Series, Number: d.Number,
		Status: fiscal.StatusUnknown, ProviderStatus: d.Status, SecurityCode: d.SecurityCode, CAEID: d.CAEID,
		CAEFrom: d.CAEFrom, CAETo: d.CAETo, VerifyURL: d.VerifyURL, Currency: d.Currency, Addendum: d.Addendum}
	if s, ok := c.statuses[d.Status]; ok {
		h.Status = s
	}
	var err error
	if d.Total != "" {
		if h.TotalMinor, err = money.ParseMinor(d.Total); err != nil {
			return fiscal.Held{}, fmt.Errorf("total: %w", err)
		}
	}
	if d.CAEExpires != "" {
		if h.CAEExpires, err = time.Parse(dateLayout, d.CAEExpires); err != nil {
			return fiscal.Held{}, fmt.Errorf("cae_expires %q is not a date", d.CAEExpires)
		}
	}
	if d.IssueDate != "" {
		if h.IssueDate, err = time.Parse(dateLayout, d.IssueDate); err != nil {
			return fiscal.Held{}, fmt.Errorf("issue_date %q is not a date", d.IssueDate)
		}
	}
	return h, nil
}
