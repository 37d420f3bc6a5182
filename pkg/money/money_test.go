package money_test

import (
	"errors"
	"testing"

	"github.com/onceflow/onceflow/pkg/money"
)

func TestParseMinor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1220", 122000, true},
		{"1220.5", 122050, true},
		{"1220.50", 122050, true},
		{"0.07", 7, true},
		{"72.00", 7200, true},
		{"803.04", 80304, true},
		{"1.234", 0, false},
		{"72.000", 7200, true},
		{"72.0001", 0, false},
		{"-5", 0, false},
		{"1e3", 0, false},
		{"", 0, false},
		{"12.", 0, false},
		{".5", 0, false},
		{"99999999999999999999", 0, false},
	}
	for _, tc := range tests {
		got, err := money.ParseMinor(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("ParseMinor(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, money.ErrInvalid) {
			t.Errorf("ParseMinor(%q) = %d, %v; want ErrInvalid", tc.in, got, err)
		}
	}
}

func TestFormatMinorRoundTrips(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 7, 100, 122050, 80304} {
		s := money.FormatMinor(n)
		back, err := money.ParseMinor(s)
		if err != nil || back != n {
			t.Errorf("FormatMinor(%d) = %q, parses back to %d, %v", n, s, back, err)
		}
	}
}
