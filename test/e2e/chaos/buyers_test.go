package chaos

import (
	"testing"

	"github.com/onceflow/onceflow/pkg/taxid"
)

func TestGeneratedIdentifiersAreValid(t *testing.T) {
	for i := range 500 {
		if c := ci(i); !taxid.ValidCI(c) {
			t.Fatalf("ci(%d) = %s is not a valid CI", i, c)
		}
		if r := rut(i); !taxid.ValidRUT(r) {
			t.Fatalf("rut(%d) = %s is not a valid RUT", i, r)
		}
	}
}
