package httpapi

import (
	"math"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/onceflow/onceflow/pkg/taxid"
	"github.com/onceflow/onceflow/provider/fiscal/vat"
)

var (
	countryCode  = regexp.MustCompile(`^[A-Z]{2}$`)
	currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)
	otherDocID   = regexp.MustCompile(`^[A-Z0-9-]{3,20}$`)
)

// Field lengths follow DGI's CFE receiver fields (RznSocRecep 150,
// DirRecep 70, CiudadRecep 30, DeptoRecep 30).
var maxLen = map[string]int{"legal_name": 150, "address": 70, "city": 30, "department": 30, "email": 100}

// normalize upper-cases codes and writes a CI as digits only.
func (in *Customer) normalize() {
	in.DocType = strings.ToUpper(strings.TrimSpace(in.DocType))
	in.DocCountry = strings.ToUpper(strings.TrimSpace(in.DocCountry))
	in.Country = strings.ToUpper(strings.TrimSpace(in.Country))
	in.DocNumber = strings.ToUpper(strings.TrimSpace(in.DocNumber))
	if in.DocType == "CI" {
		in.DocNumber = taxid.NormalizeCI(in.DocNumber)
	}
}

// validate checks a normalized customer; messages never echo the values.
func (in Customer) validate() fieldErrors {
	errs := fieldErrors{}
	errs.require("legal_name", in.LegalName)
	if !countryCode.MatchString(in.DocCountry) {
		errs["doc_country"] = "want an ISO 3166 alpha-2 code such as UY"
	}
	if in.Country != "" && !countryCode.MatchString(in.Country) {
		errs["country"] = "want an ISO 3166 alpha-2 code such as UY"
	}
	if msg := docNumberProblem(in.DocType, in.DocCountry, in.DocNumber); msg != "" {
		errs["doc_number"] = msg
	}
	if in.DocType == "RUT" {
		errs.require("address", in.Address)
		errs.require("city", in.City)
	}
	if in.Email != "" {
		if a, err := mail.ParseAddress(in.Email); err != nil || a.Address != in.Email {
			errs["email"] = "want a plain address such as name@example.com"
		}
	}
	for field, value := range map[string]string{"legal_name": in.LegalName, "address": in.Address, "city": in.City, "department": in.Department, "email": in.Email} {
		if utf8.RuneCountInString(value) > maxLen[field] {
			errs[field] = "longer than the CFE allows"
		}
	}
	if !docTypes[in.DocType] {
		errs["doc_type"] = "want RUT, CI, PASSPORT or OTHER"
	}
	return errs
}

// docNumberProblem checks the number against its type: a RUT or CI is
// Uruguayan and carries a check digit.
func docNumberProblem(docType, country, number string) string {
	switch docType {
	case "RUT":
		if country != "UY" {
			return "a RUT is Uruguayan: want doc_country UY"
		}
		if !taxid.ValidRUT(number) {
			return "not a valid RUT: want 12 digits with a correct check digit"
		}
	case "CI":
		if country != "UY" {
			return "a CI is Uruguayan: want doc_country UY"
		}
		if !taxid.ValidCI(number) {
			return "not a valid CI: want 7 or 8 digits with a correct check digit"
		}
	case "PASSPORT", "OTHER":
		if !otherDocID.MatchString(number) {
			return "want 3 to 20 letters, digits or hyphens"
		}
	}
	return ""
}

// validateOrder checks an order's fields and that its lines add up.
func validateOrder(in Order) fieldErrors {
	errs := fieldErrors{}
	errs.require("merchant_order_id", in.MerchantOrderID)
	if len(in.MerchantOrderID) > 100 {
		errs["merchant_order_id"] = "want at most 100 characters"
	}
	if in.PSPPaymentID != nil && (*in.PSPPaymentID == "" || len(*in.PSPPaymentID) > 100) {
		errs["psp_payment_id"] = "want 1 to 100 characters, or leave it out"
	}
	validatePlan(in, errs)
	if in.AmountMinor <= 0 {
		errs["amount_minor"] = "want a positive amount in minor units"
	}
	if !currencyCode.MatchString(in.Currency) {
		errs["currency"] = "want an ISO 4217 code such as UYU"
	}
	validateLines(in, errs)
	return errs
}

// validatePlan checks a PSP plan is named only on a recurring order.
func validatePlan(in Order, errs fieldErrors) {
	switch {
	case in.PSPPlanID == nil:
	case *in.PSPPlanID == "" || len(*in.PSPPlanID) > 100:
		errs["psp_plan_id"] = "want 1 to 100 characters, or leave it out"
	case !in.Recurring:
		errs["psp_plan_id"] = "only a recurring order names a plan"
	}
}

// validateLines checks each line's arithmetic and that the lines add up,
// refusing products and sums that overflow int64 (they would wrap and
// could pass the equality checks).
func validateLines(in Order, errs fieldErrors) {
	var sum int64
	overflow := false
	for i, l := range in.Lines {
		switch {
		case strings.TrimSpace(l.Description) == "" || l.Quantity < 1 || l.UnitMinor < 0:
			errs[linesField(i)] = "want a description, a quantity of at least 1 and amount_minor = quantity × unit_minor"
		case l.UnitMinor > math.MaxInt64/l.Quantity:
			errs[linesField(i)] = "quantity × unit_minor is too large"
		case l.AmountMinor != l.Quantity*l.UnitMinor:
			errs[linesField(i)] = "want a description, a quantity of at least 1 and amount_minor = quantity × unit_minor"
		}
		ind, err := vat.ParseIndicator(l.VAT)
		if err != nil {
			errs[linesField(i)+".vat"] = "want one of " + strings.Join(vat.Names(), ", ") + ", or leave it out for the basic rate"
		}
		switch {
		case l.AmountMinor < 0 || sum > math.MaxInt64-l.AmountMinor || sum < math.MinInt64+l.AmountMinor:
			overflow = true
		case ind == vat.NotBillableNegative:
			sum -= l.AmountMinor
		default:
			sum += l.AmountMinor
		}
	}
	switch {
	case overflow:
		errs["lines"] = "line amounts add up to more than an amount can be"
	case len(in.Lines) > 0 && sum != in.AmountMinor:
		errs["lines"] = "line amounts (not_billable_negative ones subtracted) must add up to amount_minor"
	}
}

func linesField(i int) string { return "lines[" + strconv.Itoa(i) + "]" }
