package fiscal

// ValidRUT reports whether s is a Uruguayan RUT: exactly 12 ASCII digits
// whose last digit is DGI's check digit over the first eleven (weights
// 4,3,2,9,8,7,6,5,4,3,2; check = 11 − sum mod 11, where 11 means 0 and 10
// means no valid RUT has these eleven digits). It checks only the form and
// the check digit, not that DGI ever issued the number.
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

// digits reports whether s consists of ASCII digits only.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
