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
}

// Verdict is what the fiscal sandbox holds against what was paid and refunded.
type Verdict struct {
	Documents  int      // documents onceflow made for the sources
	Duplicates int      // documents beyond the first per source, injected ones excepted
	Missing    int      // sources without a document
	Injected   int      // duplicates the sandbox made on purpose
	Problems   []string // one line per source that is not exactly right
}

// finalStatuses are the CFEStatus values after which nothing changes:
// authorized (5), rejected by DGI (3), voided (6 is not used; see
// docs/wire-invoicy.md).
var finalStatuses = map[int]bool{5: true, 3: true}

// Check compares the sandbox's documents with the sources: each source must
// have exactly one document, of its type, in a final state. Documents the
// sandbox duplicated on purpose are counted apart.
func Check(sources []Source, docs []stack.Document) Verdict {
	held := stack.BySource(docs)
	var v Verdict
	for _, src := range sources {
		made := 0
		for _, d := range held[src.Key] {
			if d.Injected {
				v.Injected++
				continue
			}
			made++
			v.Documents++
			if d.Type != src.WantType {
				v.Problems = append(v.Problems, fmt.Sprintf("%s: document of type %d, want %d", src.Key, d.Type, src.WantType))
			}
			if !finalStatuses[d.Status] {
				v.Problems = append(v.Problems, fmt.Sprintf("%s: document %s is not final (CFEStatus %d)", src.Key, d.Reference, d.Status))
			}
		}
		switch {
		case made == 0:
			v.Missing++
			v.Problems = append(v.Problems, src.Key+": no document")
		case made > 1:
			v.Duplicates += made - 1
			v.Problems = append(v.Problems, fmt.Sprintf("%s: %d documents", src.Key, made))
		}
	}
	known := map[string]bool{}
	for _, src := range sources {
		known[src.Key] = true
	}
	for key, ds := range held {
		if !known[key] {
			v.Duplicates += len(ds)
			v.Problems = append(v.Problems, fmt.Sprintf("%s: %d documents for nothing the driver paid or refunded", key, len(ds)))
		}
	}
	sort.Strings(v.Problems)
	return v
}
