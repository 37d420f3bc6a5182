package chaos

import (
	"fmt"
	"sort"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// Source is one payment or refund the driver made, and the document it
// must end in.
type Source struct {
	Key      string // "payment:<id>" or "refund:<id>"
	WantType int    // CFE type: 101/111 for an invoice, 102/112 for a credit note
	PSP      string // where it was paid or refunded
}

// Tally is one PSP's share of a Verdict: its sources and what the fiscal
// sandbox holds for them.
type Tally struct {
	Sources, Documents, Duplicates, Missing int
}

// unknownPSP tallies documents for no source the driver made.
const unknownPSP = "unknown"

// Verdict is what the fiscal sandbox holds against what was paid and refunded.
type Verdict struct {
	Documents  int      // valid documents onceflow made for the sources
	Duplicates int      // valid documents beyond the first per source, injected ones excepted
	Missing    int      // sources without a valid document
	Rejected   int      // documents DGI rejected: kept for the record, never valid
	Injected   int      // duplicates the sandbox made on purpose
	Problems   []string // one line per source that is not exactly right
	// ByPSP splits Documents, Duplicates and Missing by the sources' PSP,
	// so a run over several PSPs shows each one exactly once.
	ByPSP map[string]Tally
}

// CFEStatus values of the fiscal sandbox (docs/wire-invoicy.md): a document
// is valid once DGI authorized it; a rejected one never counts.
const (
	statusRejected   = 3
	statusAuthorized = 5
)

// Check compares the sandbox's documents with the sources: each source must
// have exactly one valid (authorized) document, of its type, and nothing
// else but rejected ones. Documents the sandbox duplicated on purpose are
// counted apart.
func Check(sources []Source, docs []stack.Document) Verdict {
	held := stack.BySource(docs)
	v := Verdict{ByPSP: map[string]Tally{}}
	known := map[string]bool{}
	for _, src := range sources {
		known[src.Key] = true
		v.source(src, held[src.Key])
	}
	for key, ds := range held {
		if known[key] {
			continue
		}
		if n := countValid(ds); n > 0 {
			v.Duplicates += n
			t := v.ByPSP[unknownPSP]
			t.Duplicates += n
			v.ByPSP[unknownPSP] = t
			v.Problems = append(v.Problems, fmt.Sprintf("%s: %d documents for nothing the driver paid or refunded", key, n))
		}
	}
	sort.Strings(v.Problems)
	return v
}

// source checks one source's documents.
func (v *Verdict) source(src Source, ds []stack.Document) {
	dup, missing := v.Duplicates, v.Missing
	valid := 0
	for _, d := range ds {
		switch {
		case d.Injected:
			v.Injected++
		case d.Status == statusRejected:
			v.Rejected++
		case d.Status != statusAuthorized:
			v.Problems = append(v.Problems, fmt.Sprintf("%s: document %s is not final (CFEStatus %d)", src.Key, d.Reference, d.Status))
		default:
			valid++
			v.Documents++
			if d.Type != src.WantType {
				v.Problems = append(v.Problems, fmt.Sprintf("%s: document of type %d, want %d", src.Key, d.Type, src.WantType))
			}
		}
	}
	switch {
	case valid == 0:
		v.Missing++
		v.Problems = append(v.Problems, src.Key+": no valid document")
	case valid > 1:
		v.Duplicates += valid - 1
		v.Problems = append(v.Problems, fmt.Sprintf("%s: %d valid documents", src.Key, valid))
	}
	t := v.ByPSP[src.PSP]
	t.Sources++
	t.Documents += valid
	t.Duplicates += v.Duplicates - dup
	t.Missing += v.Missing - missing
	v.ByPSP[src.PSP] = t
}

// countValid counts the authorized documents onceflow made among ds.
func countValid(ds []stack.Document) int {
	n := 0
	for _, d := range ds {
		if !d.Injected && d.Status == statusAuthorized {
			n++
		}
	}
	return n
}
