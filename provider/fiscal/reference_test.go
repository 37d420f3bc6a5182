package fiscal

import (
	"strconv"
	"strings"
	"testing"
)

// The expected values were computed once (independently, with Python's
// hashlib) and must never change: references already stored at the provider
// depend on them.
func TestReferenceStable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind, ref string
		k         Kind
		want      string
	}{
		{"payment", "D-4-abc", KindInvoice, "997043242926837602"},
		{"payment", "D-4-abc", KindCreditNote, "651725536494921822"},
		{"payment", "D-4-abd", KindInvoice, "574802223368641531"},
		{"refund", "REF42342", KindCreditNote, "465715899984643559"},
		{"payment", "", KindInvoice, "815299312304262429"},
	}
	for _, tt := range tests {
		if got := Reference(tt.kind, tt.ref, tt.k); got != tt.want {
			t.Errorf("Reference(%q, %q, %q) = %s, want %s", tt.kind, tt.ref, tt.k, got, tt.want)
		}
	}
}

// The sequence after a collision is frozen too (values computed with
// Python's hashlib).
func TestReferencesSequence(t *testing.T) {
	t.Parallel()
	refs := References("payment", "D-4-abc", KindInvoice)
	want := []string{"997043242926837602", "803040837151583459", "541943293913170438"}
	if len(refs) != ReferenceCandidates {
		t.Fatalf("%d references, want %d", len(refs), ReferenceCandidates)
	}
	for i, w := range want {
		if refs[i] != w {
			t.Errorf("References[%d] = %s, want %s", i, refs[i], w)
		}
	}
	seen := make(map[string]bool)
	for _, r := range refs {
		if !ValidReference(r) || seen[r] {
			t.Fatalf("reference %s invalid or repeated in %v", r, refs)
		}
		seen[r] = true
	}
}

func TestReferenceShape(t *testing.T) {
	t.Parallel()
	seen := make(map[string]string)
	for i := range 2000 {
		for _, k := range []Kind{KindInvoice, KindCreditNote} {
			src := "D-4-" + strconv.Itoa(i)
			ref := Reference("payment", src, k)
			if len(ref) != 18 || ref[0] == '0' || strings.Trim(ref, "0123456789") != "" {
				t.Fatalf("Reference = %q: want 18 digits without a leading zero", ref)
			}
			if !ValidReference(ref) {
				t.Fatalf("ValidReference(%q) = false", ref)
			}
			if _, err := strconv.ParseInt(ref, 10, 64); err != nil {
				t.Fatalf("reference %s does not fit int64: %v", ref, err)
			}
			key := src + " " + string(k)
			if prev, dup := seen[ref]; dup {
				t.Fatalf("%s and %s share reference %s", prev, key, ref)
			}
			seen[ref] = key
		}
	}
	if Reference("payment", "x", KindInvoice) == Reference("refund", "x", KindInvoice) {
		t.Error("source kind does not change the reference")
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	doc := validDoc()
	ours := Held{Reference: doc.Reference, Type: doc.Type, Addendum: doc.Addendum, Status: StatusAuthorized}
	otherType := ours
	otherType.Type = EFactura
	otherSource := ours
	otherSource.Addendum = Addendum("payment", "D-4-zzz", KindInvoice)
	otherRef := ours
	otherRef.Reference = "123"
	otherTotal := ours
	otherTotal.TotalMinor = doc.TotalMinor + 1
	totalGiven := ours
	totalGiven.TotalMinor = doc.TotalMinor

	tests := []struct {
		name   string
		held   []Held
		want   Verdict
		reason string
	}{
		{"nothing held", nil, VerdictNone, ""},
		{"ours", []Held{ours}, VerdictAdopt, ""},
		{"two of ours", []Held{ours, ours}, VerdictConflict, "2 documents"},
		{"another type", []Held{otherType}, VerdictConflict, "type 111"},
		{"another source", []Held{otherSource}, VerdictConflict, "another source"},
		{"another reference", []Held{otherRef}, VerdictConflict, "returned reference"},
		{"another total", []Held{otherTotal}, VerdictConflict, "total"},
		{"ours with its total", []Held{totalGiven}, VerdictAdopt, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, h, reason := Classify(doc, tt.held)
			if v != tt.want {
				t.Fatalf("verdict = %s, want %s (reason %q)", v, tt.want, reason)
			}
			if v == VerdictAdopt && h != tt.held[0] {
				t.Errorf("adopted %+v, want %+v", h, ours)
			}
			if v != VerdictConflict && reason != "" {
				t.Errorf("reason %q without conflict", reason)
			}
			if !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q does not mention %q", reason, tt.reason)
			}
			if len(tt.held) == 1 && tt.held[0].Matches(doc) != (v == VerdictAdopt) {
				t.Errorf("Matches disagrees with Classify")
			}
		})
	}
}
