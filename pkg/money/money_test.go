package money_test

import (
	"errors"
	"math"
	"testing"

	"github.com/onceflow/onceflow/pkg/money"
)

func TestFormatMinor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0.00"},
		{5, "0.05"},
		{50, "0.50"},
		{100, "1.00"},
		{122000, "1220.00"},
		{122050, "1220.50"},
		{122005, "1220.05"},
		{math.MaxInt64, "92233720368547758.07"},
		{-150, "-1.50"},
		{math.MinInt64, "-92233720368547758.08"},
	}
	for _, tt := range tests {
		if got := money.FormatMinor(tt.in); got != tt.want {
			t.Errorf("money.FormatMinor(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

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
		{"1220.05", 122005, true},
		{"0", 0, true},
		{"0.01", 1, true},
		{"007.10", 710, true},
		{"92233720368547758.07", math.MaxInt64, true},
		{"92233720368547758.08", 0, false},
		{"92233720368547759", 0, false},
		{"99999999999999999999", 0, false},
		{"1220.505", 0, false},
		{"1220.500", 122050, true},
		{"72.000", 7200, true},
		{"72.0001", 0, false},
		{"-1220", 0, false},
		{"+1220", 0, false},
		{"1,220.00", 0, false},
		{"1220,50", 0, false},
		{"1e3", 0, false},
		{" 1220", 0, false},
		{"1220 ", 0, false},
		{"1220.", 0, false},
		{".50", 0, false},
		{"1.2.3", 0, false},
		{"", 0, false},
		{"abc", 0, false},
		{"NaN", 0, false},
		{"１２", 0, false}, // full-width digits
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := money.ParseMinor(tt.in)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("money.ParseMinor(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, money.ErrInvalid) {
				t.Fatalf("money.ParseMinor(%q) = %d, %v; want money.ErrInvalid", tt.in, got, err)
			}
		})
	}
}

func TestMoneyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range []int64{0, 1, 99, 100, 101, 122000, 999999999, math.MaxInt64} {
		got, err := money.ParseMinor(money.FormatMinor(v))
		if err != nil || got != v {
			t.Errorf("money.ParseMinor(money.FormatMinor(%d)) = %d, %v", v, got, err)
		}
	}
}
