// Package vat computes the VAT side of a CFE: each line's VAT indicator
// (DGI's IndFact), the rates in force on a date, and DGI's totals (amount
// not taxed, net and VAT at each rate, total, amount to pay, line count) in
// integer minor units. Nothing here uses floating point: rates are basis
// points and every division rounds half up on integers.
package vat

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"
)

// Indicator is DGI's IndFact: how a line is taxed.
type Indicator int

// The indicators onceflow issues (DGI defines a few more, for remitos,
// resguardos, e-Boletas and small sellers, that a merchant of goods and
// services does not use).
const (
	Exempt              Indicator = 1  // exento: amount not taxed (MntNoGrv)
	Minimum             Indicator = 2  // tasa mínima (10 %)
	Basic               Indicator = 3  // tasa básica (22 %)
	NotBillable         Indicator = 6  // no facturable: outside the total, added to the amount to pay
	NotBillableNegative Indicator = 7  // no facturable negativo: subtracted from the amount to pay
	Export              Indicator = 10 // exportación y asimiladas (MntExpoyAsim)
	Suspended           Indicator = 12 // IVA en suspenso (MntIVaenSusp)
)

var names = map[Indicator]string{
	Exempt: "exempt", Minimum: "minimum", Basic: "basic", NotBillable: "not_billable",
	NotBillableNegative: "not_billable_negative", Export: "export", Suspended: "suspended",
}

// Valid reports whether i is an indicator onceflow issues.
func (i Indicator) Valid() bool {
	_, ok := names[i]
	return ok
}

// String is i's name in onceflow's API ("exempt", "minimum", "basic", ...).
func (i Indicator) String() string {
	if n, ok := names[i]; ok {
		return n
	}
	return fmt.Sprintf("indicator(%d)", int(i))
}

// Names lists the indicator names ParseIndicator accepts.
func Names() []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ParseIndicator reads an indicator name; the empty name is Basic, the rate
// every line had before lines carried one.
func ParseIndicator(name string) (Indicator, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return Basic, nil
	}
	for i, n := range names {
		if n == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("VAT indicator %q: want one of %s", name, strings.Join(Names(), ", "))
}

// Line is what the totals need of one CFE line: its indicator and its
// amount (MontoItem), never negative; a NotBillableNegative line's amount is
// subtracted.
type Line struct {
	Indicator   Indicator
	AmountMinor int64
}

// Totals is DGI's Totales block in minor units of the document's currency.
type Totals struct {
	NonTaxed      int64 // MntNoGrv: exempt lines
	Export        int64 // MntExpoyAsim
	Suspended     int64 // MntIVaenSusp
	NetMinimum    int64 // MntNetoIvaTasaMin
	NetBasic      int64 // MntNetoIVATasaBasica
	VATMinimum    int64 // MntIVATasaMin
	VATBasic      int64 // MntIVATasaBasica
	Total         int64 // MntTotal
	NonBillable   int64 // MontoNF: may be negative
	Pay           int64 // MntPagar = Total + NonBillable
	Lines         int   // CantLinDet
	MinimumRateBP int64 // IVATasaMin in basis points (1000 = 10 %)
	BasicRateBP   int64 // IVATasaBasica in basis points (2200 = 22 %)
	ExcludingVAT  int64 // NonTaxed + Export + Suspended + both nets: what the e-Ticket threshold compares
}

// ErrAmounts is wrapped by every error Compute returns.
var ErrAmounts = errors.New("invalid CFE amounts")

// Compute returns DGI's totals of lines at rates r. With inclusive prices
// (MntBruto = 1, what onceflow sends) each line amount includes its VAT:
// each rate's net is the sum of its lines divided by 1 + the rate, rounded
// half up to the minor unit, and its VAT is the rest, so the total is
// exactly the sum of the lines. Otherwise amounts are net and each rate's
// VAT is the sum times the rate, rounded half up. Rounding happens once per
// rate, never per line.
func Compute(lines []Line, r Rates, inclusive bool) (Totals, error) {
	t := Totals{Lines: len(lines), MinimumRateBP: r.MinimumBP, BasicRateBP: r.BasicBP}
	var minimum, basic int64
	for i, l := range lines {
		if l.AmountMinor < 0 {
			return Totals{}, fmt.Errorf("%w: line %d: negative amount", ErrAmounts, i+1)
		}
		var dst *int64
		switch l.Indicator {
		case Exempt:
			dst = &t.NonTaxed
		case Minimum:
			dst = &minimum
		case Basic:
			dst = &basic
		case NotBillable:
			dst = &t.NonBillable
		case NotBillableNegative:
			if t.NonBillable < math.MinInt64+l.AmountMinor {
				return Totals{}, fmt.Errorf("%w: amounts overflow", ErrAmounts)
			}
			t.NonBillable -= l.AmountMinor
			continue
		case Export:
			dst = &t.Export
		case Suspended:
			dst = &t.Suspended
		default:
			return Totals{}, fmt.Errorf("%w: line %d: unsupported VAT indicator %d", ErrAmounts, i+1, l.Indicator)
		}
		if err := add(dst, l.AmountMinor); err != nil {
			return Totals{}, err
		}
	}
	var err error
	if t.NetMinimum, t.VATMinimum, err = split(minimum, r.MinimumBP, inclusive); err != nil {
		return Totals{}, err
	}
	if t.NetBasic, t.VATBasic, err = split(basic, r.BasicBP, inclusive); err != nil {
		return Totals{}, err
	}
	for _, v := range []int64{t.NonTaxed, t.Export, t.Suspended, t.NetMinimum, t.NetBasic} {
		if err := add(&t.ExcludingVAT, v); err != nil {
			return Totals{}, err
		}
	}
	t.Total = t.ExcludingVAT
	for _, v := range []int64{t.VATMinimum, t.VATBasic} {
		if err := add(&t.Total, v); err != nil {
			return Totals{}, err
		}
	}
	t.Pay = t.Total
	if err := add(&t.Pay, t.NonBillable); err != nil {
		return Totals{}, err
	}
	if t.Pay < 0 {
		return Totals{}, fmt.Errorf("%w: the amount to pay is negative", ErrAmounts)
	}
	return t, nil
}

// add adds v to *dst, refusing an overflow.
func add(dst *int64, v int64) error {
	if (v > 0 && *dst > math.MaxInt64-v) || (v < 0 && *dst < math.MinInt64-v) {
		return fmt.Errorf("%w: amounts overflow", ErrAmounts)
	}
	*dst += v
	return nil
}

// split returns the net and VAT of amount at rateBP basis points: amount
// is gross when inclusive, net otherwise.
func split(amount, rateBP int64, inclusive bool) (net, tax int64, err error) {
	if amount == 0 {
		return 0, 0, nil
	}
	if rateBP <= 0 {
		return 0, 0, fmt.Errorf("%w: no VAT rate for taxed lines", ErrAmounts)
	}
	if inclusive {
		net = RoundDiv(big.NewInt(amount), big.NewInt(10000), big.NewInt(10000+rateBP))
		return net, amount - net, nil
	}
	tax = RoundDiv(big.NewInt(amount), big.NewInt(rateBP), big.NewInt(10000))
	if amount > math.MaxInt64-tax {
		return 0, 0, fmt.Errorf("%w: amounts overflow", ErrAmounts)
	}
	return amount, tax, nil
}

// RoundDiv returns a × b / c rounded half up (away from zero for halves of
// positive values); a, b and c must be positive and the result fit int64.
func RoundDiv(a, b, c *big.Int) int64 {
	num := new(big.Int).Mul(a, b)
	num.Mul(num, big.NewInt(2))
	num.Add(num, c)
	den := new(big.Int).Mul(c, big.NewInt(2))
	return num.Quo(num, den).Int64()
}
