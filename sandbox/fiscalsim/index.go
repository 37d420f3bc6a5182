package fiscalsim

import (
	"maps"
	"slices"
	"sort"
)

// index finds documents without reading every one: a soak leaves a million
// in the simulator, and a listing that read them all would hold s.mu, and
// every emission waiting on it, for as long. Each list holds indices in
// docs in issue order.
type index struct {
	byRef     map[string][]int    // under each reference
	byType    map[int][]int       // of each CFE type, so in number order too
	byDate    map[string][]int    // issued on each date (IssueDate)
	referring map[cfeNumber][]int // naming each document in a Referencia
}

// cfeNumber names one CFE: its type, series and number.
type cfeNumber struct {
	typ    int
	series string
	number int
}

func newIndex() index {
	return index{byRef: map[string][]int{}, byType: map[int][]int{}, byDate: map[string][]int{}, referring: map[cfeNumber][]int{}}
}

// add files document d, at index i in docs.
func (x index) add(i int, d Document) {
	x.byRef[d.Reference] = append(x.byRef[d.Reference], i)
	x.byType[d.Type] = append(x.byType[d.Type], i)
	x.byDate[d.IssueDate] = append(x.byDate[d.IssueDate], i)
	for _, r := range d.RefersTo {
		k := cfeNumber{r.Type, r.Series, r.Number}
		if l := x.referring[k]; len(l) == 0 || l[len(l)-1] != i { // once, if it names k twice
			x.referring[k] = append(l, i)
		}
	}
}

// rebuild files docs anew, after they were compacted.
func (x index) rebuild(docs []Document) {
	clear(x.byRef)
	clear(x.byType)
	clear(x.byDate)
	clear(x.referring)
	for i, d := range docs {
		x.add(i, d)
	}
}

// numbered returns the indices of the documents of type typ numbered
// first to last, in issue order. Numbers rise with issue order within a
// type (storeLocked), so the span is found by binary search.
func (x index) numbered(docs []Document, typ, first, last int) []int {
	all := x.byType[typ]
	lo := sort.Search(len(all), func(k int) bool { return docs[all[k]].Number >= first })
	hi := sort.Search(len(all), func(k int) bool { return docs[all[k]].Number > last })
	return all[lo:max(lo, hi)]
}

// unnamed returns the indices of the documents a filter naming no
// reference can match, in issue order: through the number range when it
// has one, else the period, else the type; every document otherwise.
func (x index) unnamed(docs []Document, f filter) []int {
	var lists [][]int
	switch {
	case f.numbers[1] != 0:
		types := []int{f.typ}
		if f.typ == 0 {
			types = slices.Collect(maps.Keys(x.byType))
		}
		for _, t := range types {
			lists = append(lists, x.numbered(docs, t, f.numbers[0], f.numbers[1]))
		}
	case f.from != "" && f.to != "":
		for date, idx := range x.byDate {
			if date >= f.from && date <= f.to {
				lists = append(lists, idx)
			}
		}
	case f.typ != 0:
		lists = append(lists, x.byType[f.typ])
	default:
		all := make([]int, len(docs))
		for i := range all {
			all[i] = i
		}
		return all
	}
	out := slices.Concat(lists...)
	if len(lists) > 1 {
		slices.Sort(out)
	}
	return out
}
