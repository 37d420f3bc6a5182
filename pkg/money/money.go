// Package money converts decimal amounts to integer minor units and back,
// never through floating point.
package money

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalid is returned for amounts that are not plain non-negative decimals
// with at most two fraction digits.
var ErrInvalid = errors.New("invalid amount")

// ParseMinor parses "1220", "1220.5" or "1220.50" into minor units (122050).
// Fraction digits past the second must be zeros ("72.000" is 7200). Signs,
// exponents, other precision and junk are ErrInvalid.
func ParseMinor(s string) (int64, error) {
	whole, frac, hasDot := strings.Cut(strings.TrimSpace(s), ".")
	if len(frac) > 2 && strings.TrimRight(frac[2:], "0") == "" {
		frac = frac[:2]
	}
	if whole == "" || !digits(whole) || (hasDot && (frac == "" || len(frac) > 2 || !digits(frac))) {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	return n, nil
}

// FormatMinor renders minor units with two decimals: 122050 → "1220.50".
func FormatMinor(minor int64) string {
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	return fmt.Sprintf("%s%d.%02d", sign, minor/100, minor%100)
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
