package taxid

import (
	"strings"
	"testing"
)

// FuzzRUT checks fuzzed RUTs: a valid one is 12 ASCII digits whose check
// digit agrees with DGI's rule, and no other last digit is valid too.
func FuzzRUT(f *testing.F) {
	for _, s := range []string{"211003420017", "210000000018", "21100342001", "2110034200170", "21100342001x", "२११००३४२००१७", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidRUT(s) {
			return
		}
		if len(s) != 12 || strings.Trim(s, "0123456789") != "" {
			t.Fatalf("ValidRUT(%q) for a string that is not 12 digits", s)
		}
		sum := 0
		for i, w := range [11]int{4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2} {
			sum += int(s[i]-'0') * w
		}
		if want := (11 - sum%11) % 11; want == 10 || int(s[11]-'0') != want {
			t.Fatalf("ValidRUT(%q) with check digit %c, want %d", s, s[11], want)
		}
		other := s[:11] + string('0'+(s[11]-'0'+1)%10)
		if ValidRUT(other) {
			t.Fatalf("ValidRUT accepts both %q and %q", s, other)
		}
	})
}

// FuzzCI checks fuzzed CIs as written by people: a valid one normalizes to
// 7 or 8 digits, and changing its check digit makes it invalid.
func FuzzCI(f *testing.F) {
	for _, s := range []string{"1.234.567-2", "12345672", "19119365", "9.999.999-0", " 1234567-2 ", "1234567-3", "..--", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidCI(s) {
			return
		}
		n := NormalizeCI(s)
		if len(n) < 7 || len(n) > 8 || strings.Trim(n, "0123456789") != "" {
			t.Fatalf("ValidCI(%q) normalizing to %q", s, n)
		}
		other := n[:len(n)-1] + string('0'+(n[len(n)-1]-'0'+1)%10)
		if ValidCI(other) {
			t.Fatalf("ValidCI accepts both %q and %q", n, other)
		}
	})
}
