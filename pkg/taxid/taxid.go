// Package taxid checks Uruguayan fiscal identifiers by form and check
// digit: the RUT of a company and the CI (cédula de identidad) of a person.
// It cannot tell whether DGI or DNIC ever issued a number.
package taxid

import "strings"

// ValidRUT reports whether s is a RUT: exactly 12 ASCII digits whose last
// digit is DGI's check digit over the first eleven (weights
// 4,3,2,9,8,7,6,5,4,3,2; check = 11 − sum mod 11, where 11 means 0 and 10
// means no valid RUT has these eleven digits).
func ValidRUT(s string) bool {
	if len(s) != 12 || !digits(s) {
		return false
	}
	weights := [11]int{4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2}
	sum := 0
	for i, w := range weights {
		sum += int(s[i]-'0') * w
	}
	check := 11 - sum%11
	switch check {
	case 11:
		check = 0
	case 10:
		return false
	}
	return int(s[11]-'0') == check
}

// NormalizeCI strips the dots and the hyphen a CI is usually written with
// ("1.234.567-2" → "12345672").
func NormalizeCI(s string) string {
	return strings.NewReplacer(".", "", "-", "").Replace(strings.TrimSpace(s))
}

// ValidCI reports whether s, once normalized, is a CI: 7 or 8 digits, the
// last the check digit over the others left-padded to seven (weights
// 2,9,8,7,6,3,4; check = (10 − sum mod 10) mod 10).
func ValidCI(s string) bool {
	n := NormalizeCI(s)
	if len(n) < 7 || len(n) > 8 || !digits(n) {
		return false
	}
	body := strings.Repeat("0", 8-len(n)) + n[:len(n)-1]
	weights := [7]int{2, 9, 8, 7, 6, 3, 4}
	sum := 0
	for i, w := range weights {
		sum += int(body[i]-'0') * w
	}
	return int(n[len(n)-1]-'0') == (10-sum%10)%10
}

// digits reports whether s is non-empty and consists of ASCII digits only.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
