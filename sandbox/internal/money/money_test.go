package money_test

import (
	"errors"
	"testing"

	"github.com/onceflow/onceflow/sandbox/internal/money"
)

func TestParseMinor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "72", want: 7200},
		{in: "72.00", want: 7200},
		{in: "72.5", want: 7250},
		{in: "803.04", want: 80304},
		{in: "0.01", want: 1},
		{in: "0", want: 0},
		{in: "1220.000", want: 122000},
		{in: "999999999999999.99", want: 99999999999999999},
		{in: "1.001", wantErr: true},
		{in: "-1.00", wantErr: true},
		{in: "+1.00", wantErr: true},
		{in: "1e2", wantErr: true},
		{in: "1.", wantErr: true},
		{in: ".5", wantErr: true},
		{in: "", wantErr: true},
		{in: "1,00", wantErr: true},
		{in: "1000000000000000", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := money.ParseMinor(tt.in)
			if tt.wantErr {
				if !errors.Is(err, money.ErrInvalid) {
					t.Fatalf("ParseMinor(%q) = %d, %v; want ErrInvalid", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseMinor(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFormatMinor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0.00"}, {1, "0.01"}, {7250, "72.50"}, {80304, "803.04"}, {-150, "-1.50"},
	}
	for _, tt := range tests {
		if got := money.FormatMinor(tt.in); got != tt.want {
			t.Errorf("FormatMinor(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
