package audit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// groupByReference groups the provider's documents by CFENumReferencia.
func groupByReference(held []fiscal.Held) map[string][]fiscal.Held {
	out := make(map[string][]fiscal.Held, len(held))
	for _, h := range held {
		out[h.Reference] = append(out[h.Reference], h)
	}
	return out
}

// compareHeld turns the provider's documents, grouped by reference, and
// ours under the same references into findings, in reference order.
func compareHeld(byRef map[string][]fiscal.Held, ours map[string]document) []store.Finding {
	refs := make([]string, 0, len(byRef))
	for ref := range byRef {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	var out []store.Finding
	for _, ref := range refs {
		held := byRef[ref]
		if ref == "" {
			out = append(out, unreferenced(held)...)
			continue
		}
		if len(held) > 1 {
			out = append(out, store.Finding{Kind: Duplicate, Reference: ref,
				Detail: fmt.Sprintf("provider holds %d documents under one reference: %s", len(held), describe(held))})
		}
		d, ok := ours[ref]
		if !ok {
			out = append(out, store.Finding{Kind: MissingHere, Reference: ref,
				Detail: "provider holds " + describe(held) + "; we have no document under this reference"})
			continue
		}
		out = append(out, compareOurs(d, held)...)
	}
	return out
}

// unreferenced reports documents the provider holds without a reference:
// none of ours (every one carries its reference), so each is missing here
// under its type, series and number.
func unreferenced(held []fiscal.Held) []store.Finding {
	out := make([]store.Finding, 0, len(held))
	for _, h := range held {
		out = append(out, store.Finding{Kind: MissingHere,
			Reference: fmt.Sprintf("cfe:%d:%s:%d", h.Type, h.Series, h.Number),
			Detail:    "provider holds " + describe([]fiscal.Held{h}) + " without a reference"})
	}
	return out
}

// compareOurs compares our document d with what the provider holds under
// its reference: documents naming another source are missing here; ours
// must agree on state and amount.
func compareOurs(d document, held []fiscal.Held) []store.Finding {
	var out []store.Finding
	var mine, others []fiscal.Held
	for _, h := range held {
		if h.Addendum == d.addendum() {
			mine = append(mine, h)
		} else {
			others = append(others, h)
		}
	}
	if len(others) > 0 {
		out = append(out, store.Finding{Kind: MissingHere, Reference: d.Reference, Detail: fmt.Sprintf(
			"provider holds %s under the reference of our %s %s, naming another source", describe(others), d.Kind, d.source())})
	}
	for _, h := range mine {
		if !compatible(fiscal.Status(d.Status), h.Status) {
			out = append(out, store.Finding{Kind: StateMismatch, Reference: d.Reference, Detail: fmt.Sprintf(
				"we hold %s %s as %s; the provider has it as %s (status code %q)", d.Kind, d.source(), d.Status, h.Status, h.ProviderStatus)})
			break
		}
	}
	for _, h := range mine {
		if h.TotalMinor != d.AmountMinor || h.Currency != d.Currency {
			out = append(out, store.Finding{Kind: AmountMismatch, Reference: d.Reference, Detail: fmt.Sprintf(
				"we hold %s %s for %s %s; the provider for %s %s", d.Kind, d.source(),
				money.FormatMinor(d.AmountMinor), d.Currency, money.FormatMinor(h.TotalMinor), h.Currency)})
			break
		}
	}
	return out
}

// compatible reports whether our state ours agrees with the provider's.
// Only our final states are compared: pending, unknown, pending_dgi and
// needs_attention are still being settled by the invoicer (look-up, DGI
// polling, an operator). Issued, observed and authorized all mean the
// document stands. A provider status missing from the status map never agrees.
func compatible(ours, theirs fiscal.Status) bool {
	if !ours.Final() {
		return true
	}
	return standing(ours) == standing(theirs)
}

func standing(s fiscal.Status) fiscal.Status {
	if s.Valid() {
		return fiscal.StatusAuthorized
	}
	return s
}

// describe names documents by type, series, number and provider status,
// and by addendum when it is one of onceflow's (it names a source, never a
// buyer); other addenda are free text and left out.
func describe(held []fiscal.Held) string {
	parts := make([]string, 0, len(held))
	for _, h := range held {
		s := fmt.Sprintf("CFE %d %s-%d (status %s", h.Type, h.Series, h.Number, h.ProviderStatus)
		if strings.HasPrefix(h.Addendum, "onceflow ") {
			s += ", " + h.Addendum
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, ", ")
}
