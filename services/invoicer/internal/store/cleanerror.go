package store

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxErrorBytes is the most of a provider's error text an attempt keeps.
const MaxErrorBytes = 300

var (
	// emails and runs of 6 or more digits (tax ids, identity card numbers,
	// phone numbers) a provider may echo back from the document sent.
	emailPattern  = regexp.MustCompile(`[^\s@<>"']+@[^\s@<>"']+`)
	digitsPattern = regexp.MustCompile(`\d(?:[\d.\-]*\d){5,}`)
)

// CleanError returns a provider's error text fit to store and show: control
// characters turned into spaces, emails and long digit runs masked, and
// clipped to MaxErrorBytes on a character boundary. A provider's message
// can echo the buyer's data back; what the attempt needs is the reason.
func CleanError(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = emailPattern.ReplaceAllString(s, "<email>")
	s = digitsPattern.ReplaceAllString(s, "<number>")
	if len(s) <= MaxErrorBytes {
		return s
	}
	cut := MaxErrorBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func cleanErrorPtr(s *string) *string {
	if s == nil {
		return nil
	}
	c := CleanError(*s)
	return &c
}
