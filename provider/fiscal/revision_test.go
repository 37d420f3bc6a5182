package fiscal_test

import (
	"slices"
	"testing"

	"github.com/onceflow/onceflow/provider/fiscal"
)

// TestRevisionReferencesAreFrozenAndApart checks a re-issue's references:
// valid, the same for the same inputs, and never one of revision 0's or of
// another revision's.
func TestRevisionReferencesAreFrozenAndApart(t *testing.T) {
	t.Parallel()
	seen := map[string]int{}
	for _, ref := range fiscal.References("payment", "D-4-abc", fiscal.KindInvoice) {
		seen[ref] = 0
	}
	for rev := 1; rev <= 3; rev++ {
		refs := fiscal.RevisionReferences("payment", "D-4-abc", fiscal.KindInvoice, rev)
		if !slices.Equal(refs, fiscal.RevisionReferences("payment", "D-4-abc", fiscal.KindInvoice, rev)) {
			t.Fatalf("revision %d: two calls differ", rev)
		}
		for _, ref := range refs {
			if !fiscal.ValidReference(ref) || len(ref) != 18 {
				t.Fatalf("revision %d: %q is not an 18-digit reference", rev, ref)
			}
			if r, dup := seen[ref]; dup {
				t.Fatalf("revision %d: %s is also revision %d's", rev, ref, r)
			}
			seen[ref] = rev
		}
	}
	if got := fiscal.RevisionReferences("payment", "D-4-abc", fiscal.KindInvoice, 1)[0]; got != frozenRevision1 {
		t.Fatalf("revision 1's first reference is %s, want %s: the derivation is frozen", got, frozenRevision1)
	}
}

// frozenRevision1 is RevisionReferences("payment", "D-4-abc", invoice, 1)[0].
const frozenRevision1 = "286305554677850474"
