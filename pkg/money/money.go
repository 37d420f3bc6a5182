// Package money converts decimal amounts to integer minor units and back,
// never through floating point. Every onceflow currency has two decimals.
package money

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrInvalid is wrapped by every error ParseMinor returns.
var ErrInvalid = errors.New("invalid amount")

// ParseMinor parses a non-negative decimal into minor units: "1220" →
// 122000, "1220.5" → 122050, "1220.50" → 122050. Fraction digits past the
// second must be zeros ("72.000" is 7200). Signs, spaces, exponents,
// grouping, a dot without digits on both sides, other precision and values
// that overflow int64 are rejected with an error wrapping ErrInvalid.
func ParseMinor(s string) (int64, error) {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || (hasDot && frac == "") || !digits(whole) || !digits(frac) {
		return 0, fmt.Errorf("%w: %q is not a plain decimal", ErrInvalid, s)
	}
	if len(frac) > 2 {
		if strings.TrimRight(frac[2:], "0") != "" {
			return 0, fmt.Errorf("%w: %q has more than two decimals", ErrInvalid, s)
		}
		frac = frac[:2]
	}
	units, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || units > math.MaxInt64/100 {
		return 0, fmt.Errorf("%w: %q is too large", ErrInvalid, s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	cents, _ := strconv.ParseInt(frac, 10, 64) // two digits, cannot fail
	if units*100 > math.MaxInt64-cents {
		return 0, fmt.Errorf("%w: %q is too large", ErrInvalid, s)
	}
	return units*100 + cents, nil
}

// FormatMinor renders minor units with exactly two decimals and no grouping:
// 122000 → "1220.00", 5 → "0.05". Amounts onceflow sends are never negative;
// should one be, it keeps its "-" so the mistake stays visible (and
// ParseMinor rejects it).
func FormatMinor(minor int64) string {
	sign := ""
	u := uint64(minor)
	if minor < 0 {
		sign = "-"
		u = uint64(-(minor + 1)) + 1 // safe for math.MinInt64
	}
	return fmt.Sprintf("%s%d.%02d", sign, u/100, u%100)
}

// digits reports whether s is empty or consists of ASCII digits only.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
