package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// auditRun is one Run's state: the findings so far, and per day (UTC
// midnight) how many provider documents its full listing returned and how
// many findings belong to it.
type auditRun struct {
	*Auditor
	out    []store.Finding
	listed map[time.Time]int
	seen   map[time.Time]int
}

// due returns the days from..to (midnights in cfg.Location) to list in
// full at now: those never listed, those whose last listing saw
// disagreements, today when listed CurrentEvery ago or longer, and an
// earlier day when it was last listed before it ended or PastEvery ago or
// longer.
func (a *Auditor) due(from, to time.Time, known map[time.Time]store.AuditDay, now time.Time) []time.Time {
	var out []time.Time
	for day := from; !day.After(to); day = day.AddDate(0, 0, 1) {
		k, ok := known[dateOnly(day)]
		switch {
		case !ok || k.Disagreements > 0:
		case day.Equal(to):
			if now.Sub(k.ListedAt) < a.cfg.CurrentEvery {
				continue
			}
		case k.ListedAt.Before(day.AddDate(0, 0, 1)):
		case now.Sub(k.ListedAt) < a.cfg.PastEvery:
			continue
		}
		out = append(out, day)
	}
	return out
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
	r.metrics.listed.Add(float64(len(held)))
	r.listed[dateOnly(day)] = len(held)
	byRef := groupByReference(held)
	known, err := r.byReference(ctx, byRef)
	if err != nil {
		return err
	}
	r.add(day, compareHeld(byRef, known)...)
	var absent []document
	for _, d := range ours {
		if len(byRef[d.Reference]) == 0 {
			absent = append(absent, d)
		}
	}
	return r.lookUp(ctx, absent, func(document) time.Time { return day })
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

// add counts found as day's and keeps them.
func (r *auditRun) add(day time.Time, found ...store.Finding) {
	r.seen[dateOnly(day)] += len(found)
	r.out = append(r.out, found...)
}

// record saves what this run learnt of each day: the days listed in full,
// the disagreements seen on the others, and that our documents changed
// before until were looked up.
func (r *auditRun) record(ctx context.Context, due []time.Time, now, until time.Time) error {
	for _, day := range due {
		d := store.AuditDay{Day: dateOnly(day), ListedAt: now, Listed: r.listed[dateOnly(day)], Disagreements: r.seen[dateOnly(day)]}
		if err := r.own.AuditDayListed(ctx, r.cfg.Provider, d); err != nil {
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
