package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// auditRun is one Run's state: the findings so far, and per day (UTC
// midnight) how many provider documents its full listing returned, whether
// it was listed onward, the highest number of each type its listing saw,
// and how many findings belong to it.
type auditRun struct {
	*Auditor
	out      []store.Finding
	reported map[string]bool
	listed   map[time.Time]int
	onward   map[time.Time]bool
	highest  map[time.Time]map[int]int64
	seen     map[time.Time]int
}

// dueDay is a day to list at the provider: in full, or onward from the
// numbers its earlier listings saw (listOnward).
type dueDay struct {
	day    time.Time
	onward bool
}

// due returns the days from..to (midnights in cfg.Location) to list at
// now: those never listed, those whose last audit saw disagreements, today
// when listed CurrentEvery ago or longer (onward when onward says so), and
// an earlier day when it was last listed before it ended or PastEvery ago
// or longer.
func (a *Auditor) due(from, to time.Time, known map[time.Time]store.AuditDay, now time.Time) []dueDay {
	var out []dueDay
	for day := from; !day.After(to); day = day.AddDate(0, 0, 1) {
		k, ok := known[dateOnly(day)]
		switch {
		case !ok || k.Disagreements > 0:
		case day.Equal(to):
			if now.Sub(later(k.ListedAt, k.OnwardAt)) < a.cfg.CurrentEvery {
				continue
			}
			out = append(out, dueDay{day: day, onward: a.onward(k, now)})
			continue
		case k.ListedAt.Before(day.AddDate(0, 0, 1)):
		case now.Sub(k.ListedAt) < a.cfg.PastEvery:
			continue
		}
		out = append(out, dueDay{day: day})
	}
	return out
}

// onward reports whether today, known as k, is listed onward at now rather
// than in full: its last full listing returned more than WholeDay documents
// (so it was listed in ranges) and is younger than PastEvery.
func (a *Auditor) onward(k store.AuditDay, now time.Time) bool {
	return k.Listed > a.cfg.WholeDay && now.Sub(k.ListedAt) < a.cfg.PastEvery
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// listDay compares the provider's whole listing of day with our documents
// of day. One of ours the listing lacks is looked up by its reference
// before it counts as missing there, so a document the provider dated
// another day is compared, not reported missing.
func (r *auditRun) listDay(ctx context.Context, day time.Time) error {
	ours, err := r.acknowledged(ctx, day, day)
	if err != nil {
		return err
	}
	held, err := r.listing(ctx, day, len(ours))
	if err != nil {
		return fmt.Errorf("list provider documents of %s: %w", day.Format(time.DateOnly), err)
	}
	r.metrics.daysListed.Inc()
	r.listed[dateOnly(day)] = len(held)
	byRef, err := r.compareListed(ctx, day, held)
	if err != nil {
		return err
	}
	var absent []document
	for _, d := range ours {
		if len(byRef[d.Reference]) == 0 {
			absent = append(absent, d)
		}
	}
	return r.lookUp(ctx, absent, func(document) time.Time { return day })
}

// compareListed compares the provider's documents of day that a listing
// returned with ours under the same references, notes the highest number of
// each type among them, and returns them by reference.
func (r *auditRun) compareListed(ctx context.Context, day time.Time, held []fiscal.Held) (map[string][]fiscal.Held, error) {
	r.metrics.listed.Add(float64(len(held)))
	highest := r.highest[dateOnly(day)]
	if highest == nil {
		highest = map[int]int64{}
		r.highest[dateOnly(day)] = highest
	}
	for _, h := range held {
		highest[int(h.Type)] = max(highest[int(h.Type)], h.Number)
	}
	byRef := groupByReference(held)
	known, err := r.byReference(ctx, byRef)
	if err != nil {
		return nil, err
	}
	r.add(day, compareHeld(byRef, known)...)
	return byRef, nil
}

// lookUpChanged looks up by reference our documents of the period whose
// audited fields changed at or after since and before until and that
// belong to a day not listed in full this run.
func (r *auditRun) lookUpChanged(ctx context.Context, from, to, since, until time.Time) error {
	p := r.period(from, to)
	var page []store.ChangedDocument
	var afterID int64
	for after := since; ; after, afterID = page[len(page)-1].ChangedAt, page[len(page)-1].ID {
		var err error
		page, err = r.invoicer.AuditChangedDocuments(ctx, p, after, afterID, until, r.cfg.PageSize)
		if err != nil {
			return err
		}
		r.metrics.read.Add(float64(len(page)))
		days := map[string]time.Time{}
		var docs []document
		for _, c := range page {
			day := r.dayOf(c)
			if _, listed := r.listed[day]; !listed {
				days[c.Reference] = day
				docs = append(docs, document(c.Document))
			}
		}
		if err := r.lookUp(ctx, docs, func(d document) time.Time { return days[d.Reference] }); err != nil {
			return err
		}
		if len(page) < r.cfg.PageSize {
			return nil
		}
	}
}

// lookUp asks the provider for docs by reference, LookupBatch at a time,
// and compares each with what it holds: nothing is missing there. Each
// finding belongs to dayOf's day of its document.
func (r *auditRun) lookUp(ctx context.Context, docs []document, dayOf func(document) time.Time) error {
	for start := 0; start < len(docs); start += r.cfg.LookupBatch {
		chunk := docs[start:min(start+r.cfg.LookupBatch, len(docs))]
		refs := make([]string, len(chunk))
		for i, d := range chunk {
			refs[i] = d.Reference
		}
		held, err := r.provider.LookupReferences(ctx, refs)
		if err != nil {
			return fmt.Errorf("look up provider documents: %w", err)
		}
		r.metrics.lookedUp.Add(float64(len(refs)))
		worker.Beat(ctx)
		byRef := groupByReference(held)
		for _, d := range chunk {
			r.add(dayOf(d), compareOne(d, byRef[d.Reference])...)
		}
	}
	return nil
}

// compareOne compares our document d with what the provider holds under
// its reference, found by a look-up.
func compareOne(d document, held []fiscal.Held) []store.Finding {
	if len(held) == 0 {
		return []store.Finding{{Kind: MissingThere, Reference: d.Reference, Detail: fmt.Sprintf(
			"we hold %s %s as %s; the provider holds nothing under it", d.Kind, d.source(), d.Status)}}
	}
	return compareHeld(map[string][]fiscal.Held{d.Reference: held}, map[string]document{d.Reference: d})
}

// add counts found as day's and keeps them, each kind and reference once:
// a document both listed and looked up in one run is reported once.
func (r *auditRun) add(day time.Time, found ...store.Finding) {
	for _, f := range found {
		key := f.Kind + " " + f.Reference
		if r.reported[key] {
			continue
		}
		r.reported[key] = true
		r.seen[dateOnly(day)]++
		r.out = append(r.out, f)
	}
}

// record saves what this run learnt of each day: the days listed in full
// or onward, the highest number of each type a listing saw, the
// disagreements seen on the days not listed in full, and that our documents
// changed before until were looked up.
func (r *auditRun) record(ctx context.Context, now, until time.Time) error {
	for day, n := range r.listed {
		d := store.AuditDay{Day: day, ListedAt: now, Listed: n, Disagreements: r.seen[day]}
		if err := r.own.AuditDayListed(ctx, r.cfg.Provider, d); err != nil {
			return err
		}
	}
	for day := range r.onward {
		if err := r.own.AuditDayListedOnward(ctx, r.cfg.Provider, day, now); err != nil {
			return err
		}
	}
	for day, highest := range r.highest {
		if err := r.own.AdvanceAuditDayNumbers(ctx, r.cfg.Provider, day, highest); err != nil {
			return err
		}
	}
	for day, n := range r.seen {
		if _, listed := r.listed[day]; !listed && n > 0 {
			if err := r.own.AuditDayDisagreements(ctx, r.cfg.Provider, day, n); err != nil {
				return err
			}
		}
	}
	return r.own.AdvanceAuditChangedUntil(ctx, r.cfg.Provider, until)
}

// dayOf is the day a changed document belongs to: its issue date, or the
// day it was created when it has none yet, as a UTC midnight.
func (a *Auditor) dayOf(c store.ChangedDocument) time.Time {
	if c.IssueDate != nil {
		return dateOnly(*c.IssueDate)
	}
	return dateOnly(c.CreatedAt.In(a.cfg.Location))
}

// period selects our documents the provider must hold for the days
// from..to (midnights in cfg.Location).
func (a *Auditor) period(from, to time.Time) store.AuditPeriod {
	return store.AuditPeriod{
		FromDate: dateOnly(from), ToDate: dateOnly(to),
		CreatedFrom: from, CreatedTo: to.AddDate(0, 0, 1),
	}
}
