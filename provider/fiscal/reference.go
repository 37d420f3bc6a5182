package fiscal

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
)

// Reference returns the deterministic provider reference of the document of
// the given kind for a source (e.g. "payment", "D-4-abc", KindInvoice). It is
// the key every look-up-before-send uses, so its derivation is frozen: it
// must return the same value for the same inputs forever. Derivation (v1):
//
//	h := SHA-256("v1|" + sourceKind + "|" + sourceRef + "|" + kind)
//	n := big-endian uint64 of h[0:8]
//	reference := decimal(n mod 9e17 + 1e17)
//
// which is always exactly 18 digits without a leading zero, fitting clients
// that type the provider's CFENumReferencia as a number (int64). The encoding
// is unambiguous because source kinds and kinds are fixed words without "|".
// Distinct sources can still collide (about one in 9e17 per pair); the
// addendum (see Addendum) tells them apart at look-up time, and a document
// whose reference another source already holds takes the next one of
// References.
func Reference(sourceKind, sourceRef string, kind Kind) string {
	return ReferenceAt(sourceKind, sourceRef, kind, 0)
}

// ReferenceCandidates is how many references References offers a document:
// should every one be held by other sources (about one in 9e17 to the
// power of ReferenceCandidates), the document cannot be recorded.
const ReferenceCandidates = 8

// ReferenceAt returns the n-th reference of the sequence a document may take
// (n from 0): ReferenceAt(…, 0) is Reference, and n > 0 hashes
// "v1|" + sourceKind + "|" + sourceRef + "|" + kind + "|" + decimal(n) the
// same way. Like Reference it is frozen: the same inputs give the same
// sequence forever.
func ReferenceAt(sourceKind, sourceRef string, kind Kind, n int) string {
	key := "v1|" + sourceKind + "|" + sourceRef + "|" + string(kind)
	if n > 0 {
		key += "|" + strconv.Itoa(n)
	}
	h := sha256.Sum256([]byte(key))
	v := binary.BigEndian.Uint64(h[:8])
	return strconv.FormatUint(v%900_000_000_000_000_000+100_000_000_000_000_000, 10)
}

// References returns the first ReferenceCandidates references of a
// document's sequence (see ReferenceAt), in the order it takes them: the
// first no other source holds is its reference. A redelivered event yields
// the same sequence, so it finds its own document again.
func References(sourceKind, sourceRef string, kind Kind) []string {
	refs := make([]string, ReferenceCandidates)
	for n := range refs {
		refs[n] = ReferenceAt(sourceKind, sourceRef, kind, n)
	}
	return refs
}

// ValidReference reports whether s has the form of a provider reference: 1 to
// 18 ASCII digits without a leading zero. Every value Reference returns is
// valid.
func ValidReference(s string) bool {
	if len(s) == 0 || len(s) > 18 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Addendum returns the text stored with the document at the provider that
// names its source: "onceflow <sourceKind> <sourceRef> <kind>". A look-up
// compares it to tell our document from another that shares the reference.
func Addendum(sourceKind, sourceRef string, kind Kind) string {
	return "onceflow " + sourceKind + " " + sourceRef + " " + string(kind)
}

// Matches reports whether h is the provider's copy of doc: same reference,
// same CFE type, same addendum (hence same source) and the same total when
// the provider states one (a zero TotalMinor is a total not given).
func (h Held) Matches(doc Document) bool {
	return h.Reference == doc.Reference && h.Type == doc.Type && h.Addendum == doc.Addendum && h.sameTotal(doc)
}

func (h Held) sameTotal(doc Document) bool {
	return h.TotalMinor == 0 || h.TotalMinor == doc.TotalMinor
}

// Verdict is what a look-up by reference means for the document about to be
// sent.
type Verdict int

// Look-up verdicts.
const (
	// VerdictNone: the provider holds nothing under the reference; sending
	// is safe (after the settle window if an earlier send was ambiguous).
	VerdictNone Verdict = iota
	// VerdictAdopt: the provider holds exactly our document; adopt its
	// state and never send again.
	VerdictAdopt
	// VerdictConflict: the provider holds several documents, or one that is
	// not ours; the document needs an operator's attention.
	VerdictConflict
)

// String returns "none", "adopt" or "conflict".
func (v Verdict) String() string {
	switch v {
	case VerdictNone:
		return "none"
	case VerdictAdopt:
		return "adopt"
	case VerdictConflict:
		return "conflict"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Classify decides what the documents held under doc.Reference mean for doc.
// It returns VerdictNone when held is empty; VerdictAdopt and the held
// document when there is exactly one and it Matches doc; otherwise
// VerdictConflict with a reason for the operator. The reason names types,
// references and addenda (source ids), never buyer data.
func Classify(doc Document, held []Held) (Verdict, Held, string) {
	switch {
	case len(held) == 0:
		return VerdictNone, Held{}, ""
	case len(held) > 1:
		return VerdictConflict, Held{}, fmt.Sprintf(
			"provider holds %d documents under reference %s", len(held), doc.Reference)
	}
	h := held[0]
	switch {
	case h.Reference != doc.Reference:
		return VerdictConflict, Held{}, fmt.Sprintf(
			"look-up for reference %s returned reference %q", doc.Reference, h.Reference)
	case h.Type != doc.Type:
		return VerdictConflict, Held{}, fmt.Sprintf(
			"provider holds a CFE of type %d under reference %s, expected type %d",
			h.Type, doc.Reference, doc.Type)
	case h.Addendum != doc.Addendum:
		return VerdictConflict, Held{}, fmt.Sprintf(
			"provider holds another source's document under reference %s: addendum %q, expected %q",
			doc.Reference, h.Addendum, doc.Addendum)
	case !h.sameTotal(doc):
		return VerdictConflict, Held{}, fmt.Sprintf(
			"provider holds a total of %d minor units under reference %s, expected %d",
			h.TotalMinor, doc.Reference, doc.TotalMinor)
	}
	return VerdictAdopt, h, ""
}

// RevisionReferences returns the reference candidates of a re-issued
// document's revision rev (rev ≥ 1): ReferenceAt's derivation over the key
// "v1|" + sourceKind + "|" + sourceRef + "|" + kind + "|r" + decimal(rev),
// then "|" + decimal(n) for the n-th candidate (n > 0). The "r" keeps every
// revision's keys apart from revision 0's (References), whose suffixes are
// bare digits. Frozen like Reference: the same inputs give the same
// sequence forever.
func RevisionReferences(sourceKind, sourceRef string, kind Kind, rev int) []string {
	refs := make([]string, ReferenceCandidates)
	for n := range refs {
		refs[n] = ReferenceAt(sourceKind, sourceRef, kind+Kind("|r"+strconv.Itoa(rev)), n)
	}
	return refs
}
