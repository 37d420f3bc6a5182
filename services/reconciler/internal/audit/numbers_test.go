package audit_test

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/services/reconciler/internal/audit"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// issueOurs has the sandbox issue payment's invoice today and records it
// as the invoicer would once the provider answered: authorized, with the
// series and number the provider gave it.
func (e *env) issueOurs(t *testing.T, payment string) {
	t.Helper()
	held, err := e.fis.Issue(payment, 12200, e.day(0))
	if err != nil {
		t.Fatalf("issue %s: %v", payment, err)
	}
	e.record(t, payment, "authorized", 12200, 0)
	e.db.Exec(t, `UPDATE invoicer.fiscal_documents SET provider_series = $1, provider_number = $2 WHERE reference = $3`,
		held.Series, held.Number, ref(payment))
}

// A day holding more of our documents than one answer may carry is listed
// type by type in number ranges, and still finds what only the provider
// holds: below our lowest number, among ours, and above our highest.
func TestADayTooLargeForOneAnswerIsListedInNumberRanges(t *testing.T) {
	e := newEnv(t)
	// e-Ticket numbers 1 to 10, in this order: the provider's only at 1, 5 and 10.
	e.emit(t, "p-before", 12200, 0)
	for _, p := range []string{"p-1", "p-2", "p-3"} {
		e.issueOurs(t, p)
	}
	e.emit(t, "p-among", 12200, 0)
	for _, p := range []string{"p-4", "p-5", "p-6", "p-7"} {
		e.issueOurs(t, p)
	}
	e.emit(t, "p-after", 12200, 0)
	want := sorted(audit.MissingHere+" "+ref("p-before"), audit.MissingHere+" "+ref("p-among"), audit.MissingHere+" "+ref("p-after"))

	for _, tt := range []struct {
		name    string
		cfg     audit.Config
		queries int
	}{
		// Ours are numbers 2-4 and 6-9: ranges 2-3, 4-5, 6-7, 8-9, then 10-11
		// (10 alone: the numbers issued end there) upwards, and 1-1 (1)
		// downwards, where numbers end.
		{"ranges", audit.Config{WholeDay: 6, NumberRange: 2}, 6},
		// Paced at 4 documents a second, a range names 4 numbers at most
		// (a second's worth): 2-5, 6-9, then 10-13 and 1-1.
		{"paced ranges", audit.Config{WholeDay: 6, Rate: 4}, 4},
		{"whole day", audit.Config{WholeDay: 7}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			cfg := tt.cfg
			cfg.Provider, cfg.Days, cfg.Location, cfg.PageSize = "invoicy", 1, e.loc, 50
			a := audit.New(e.fis.Client, store.NewInvoicerReader(e.db.Pool), store.New(e.db.Pool), cfg, audit.NewMetrics(reg))
			got, err := a.Run(t.Context(), e.noon())
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, f := range got {
				found = append(found, f.Kind+" "+f.Reference)
			}
			if found = sorted(found...); !slices.Equal(found, want) {
				t.Errorf("findings %q, want %q", found, want)
			}
			if n := counter(t, reg, "onceflow_reconciler_audit_listing_queries_total"); int(n) != tt.queries {
				t.Errorf("%v listing queries, want %d", n, tt.queries)
			}
			if n := counter(t, reg, "onceflow_reconciler_audit_provider_documents_listed_total"); n != 10 {
				t.Errorf("%v provider documents listed, want all 10", n)
			}
		})
	}
}

// A day listed in ranges is, while it is today, listed onward between its
// full listings: only the numbers above those its listings saw, so a run
// costs what is new. A document only the provider holds is found there;
// the day is listed in full on the next run, and again once PastEvery has
// passed since its last full listing.
func TestALargeTodayIsListedOnwardBetweenItsFullListings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"p-1", "p-2", "p-3", "p-4"} { // e-Ticket numbers 1 to 4
		e.issueOurs(t, p)
	}
	reg := prometheus.NewRegistry()
	a := scheduled{reg: reg, Auditor: audit.New(e.fis.Client, store.NewInvoicerReader(e.db.Pool), store.New(e.db.Pool), audit.Config{
		Provider: "invoicy", Days: 1, Location: e.loc, PageSize: 50, CurrentEvery: currentEvery, PastEvery: pastEvery,
		WholeDay: 3, NumberRange: 2,
	}, audit.NewMetrics(reg))}
	start := e.noon()
	type cost struct{ full, onward, queries, listed int }
	costs := func() cost {
		return cost{
			full:    int(counter(t, reg, "onceflow_reconciler_audit_days_listed_total")),
			onward:  int(counter(t, reg, "onceflow_reconciler_audit_days_listed_onward_total")),
			queries: int(counter(t, reg, "onceflow_reconciler_audit_listing_queries_total")),
			listed:  int(counter(t, reg, "onceflow_reconciler_audit_provider_documents_listed_total")),
		}
	}
	step := func(after time.Duration, want cost, findings ...string) {
		t.Helper()
		before := costs()
		found, _ := a.run(t, start.Add(after))
		c := costs()
		got := cost{c.full - before.full, c.onward - before.onward, c.queries - before.queries, c.listed - before.listed}
		if got != want || !slices.Equal(found, sorted(findings...)) {
			t.Errorf("audit %s after the first: %+v, findings %q; want %+v, %q", after, got, found, want, findings)
		}
	}

	// In full: ranges 1-2, 3-4 and 5-6 (empty), 4 documents.
	step(0, cost{full: 1, queries: 3, listed: 4})
	e.issueOurs(t, "p-5")
	e.emit(t, "p-only", 12200, 0) // number 6, nobody asked for it
	e.issueOurs(t, "p-6")
	// Onward from 5: ranges 5-6 and 7-8 (7 alone, where numbers end), the 3
	// new documents.
	step(currentEvery, cost{onward: 1, queries: 2, listed: 3}, audit.MissingHere+" "+ref("p-only"))
	e.record(t, "p-only", "authorized", 12200, 0) // now ours too
	// The finding's day is listed in full: 1-2, 3-4, 5-6, 7-8 (7 alone).
	step(currentEvery+time.Minute, cost{full: 1, queries: 4, listed: 7})
	step(currentEvery+2*time.Minute, cost{})
	e.issueOurs(t, "p-7")
	// Onward from 8: range 8-9 (8 alone).
	step(2*currentEvery+time.Minute, cost{onward: 1, queries: 1, listed: 1})
	// PastEvery after the last full listing, in full again: 1-2 to 7-8, all
	// full, and 9-10 (empty).
	step(currentEvery+time.Minute+pastEvery, cost{full: 1, queries: 5, listed: 8})
}
