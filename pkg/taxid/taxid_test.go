package taxid

import "testing"

// RUT check digits below were computed by hand (and cross-checked in Python)
// with DGI's weights 4,3,2,9,8,7,6,5,4,3,2.
func TestValidRUT(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"210000000019", true},  // sum 2*4+1*3+1*2 = 13 → 11-2 = 9
		{"212345670007", true},  // check 7
		{"211234560019", true},  // check 9
		{"210000000027", true},  // check 7
		{"210000000140", true},  // sum%11 = 0 → 11 → 0
		{"010000000016", true},  // check 6
		{"210000000018", false}, // wrong check digit
		{"210000000141", false}, // check is 0, not 1
		{"210000000060", false}, // these eleven digits give check 10: no RUT
		{"210000000069", false},
		{"21000000001", false},   // 11 digits
		{"2100000000190", false}, // 13 digits
		{"21000000001a", false},
		{"21.000000001", false},
		{" 21000000001", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := ValidRUT(tt.in); got != tt.want {
				t.Errorf("ValidRUT(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// The CI vectors use the weights 2,9,8,7,6,3,4; 1.234.567-2 is the
// number DNIC uses in its own examples.
func TestValidCI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want bool
	}{
		{"1.234.567-2", true},
		{"12345672", true},
		{"12345673", false}, // wrong check digit
		{"987.654-9", true}, // padded 0987654: sum 261 → check 9
		{"9876543", false},
		{"", false},
		{"123456", false},    // too short
		{"123456789", false}, // too long
		{"1.234.56a-2", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			if got := ValidCI(tt.in); got != tt.want {
				t.Errorf("ValidCI(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
