package fiscal

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FormatMinor renders an amount in minor units (cents) as a decimal string
// with exactly two decimals and no grouping: 122000 → "1220.00", 5 → "0.05".
// Fiscal amounts are never negative (a credit note carries a positive
// amount); Document.Validate rejects negative ones before anything is sent.
// Should a negative value reach FormatMinor anyway it is rendered with a
// leading "-" so the mistake stays visible, and ParseMinor rejects it.
func FormatMinor(minor int64) string {
	sign := ""
	u := uint64(minor)
	if minor < 0 {
		sign = "-"
		u = uint64(-(minor + 1)) + 1 // safe for math.MinInt64
	}
	return fmt.Sprintf("%s%d.%02d", sign, u/100, u%100)
}

// ErrBadAmount is wrapped by every error ParseMinor returns.
var ErrBadAmount = errors.New("bad amount")

// ParseMinor parses a non-negative decimal amount with at most two decimals
// into minor units: "1220" → 122000, "1220.5" → 122050, "1220.50" → 122050.
// It never goes through floating point. Signs, spaces, exponents, grouping,
// a dot without digits on both sides, more than two decimals and values that
// overflow int64 are rejected with an error wrapping ErrBadAmount.
func ParseMinor(s string) (int64, error) {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || (hasDot && frac == "") || !digits(whole) || !digits(frac) {
		return 0, fmt.Errorf("%w: %q is not a plain decimal", ErrBadAmount, s)
	}
	if len(frac) > 2 {
		return 0, fmt.Errorf("%w: %q has more than two decimals", ErrBadAmount, s)
	}
	units, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || units > math.MaxInt64/100 {
		return 0, fmt.Errorf("%w: %q is too large", ErrBadAmount, s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	cents, _ := strconv.ParseInt(frac, 10, 64) // two digits, cannot fail
	if units*100 > math.MaxInt64-cents {
		return 0, fmt.Errorf("%w: %q is too large", ErrBadAmount, s)
	}
	return units*100 + cents, nil
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
