// Package money converts decimal amount strings to and from minor units
// (cents) without floating point, for the sandboxes' two-decimal currencies.
package money

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxIntDigits keeps amount*100 well inside int64.
const maxIntDigits = 15

// ErrInvalid is returned by ParseMinor for anything but a plain non-negative
// decimal with at most two significant fractional digits.
var ErrInvalid = errors.New("invalid amount")

// ParseMinor parses a plain decimal such as "72", "72.5" or "803.04" into
// minor units (7200, 7250, 80304). Fractional digits beyond the second are
// accepted only when they are zeros. Signs, exponents and empty parts are
// refused with ErrInvalid.
func ParseMinor(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	frac = strings.TrimRight(frac, "0")
	if whole == "" || len(whole) > maxIntDigits || len(frac) > 2 || !digits(whole) || !digits(frac) {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	if strings.HasSuffix(s, ".") {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	units, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	cents := int64(0)
	for i := range 2 {
		cents *= 10
		if i < len(frac) {
			cents += int64(frac[i] - '0')
		}
	}
	return units*100 + cents, nil
}

// FormatMinor renders minor units with two decimals: 80304 → "803.04".
func FormatMinor(minor int64) string {
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	return fmt.Sprintf("%s%d.%02d", sign, minor/100, minor%100)
}

func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
