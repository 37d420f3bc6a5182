// Package audit compares what the e-invoicing provider holds for a period
// with invoicer.fiscal_documents: documents the provider holds that we have
// no record of, documents we hold as acknowledged that the provider lacks,
// several provider documents under one reference, and documents whose state
// or amount differ. Each becomes a finding, and an audit_disagreement case
// (subject audit:<finding kind>:<reference>) an operator acknowledges.
//
// A run's cost follows what is new, not the period's volume: it lists a day
// at the provider only when the day is due, and otherwise looks up by
// reference our documents that changed since the previous run
// (docs/reconciler-audit.md says how late each disagreement can be found).
//
// Findings name references, types, numbers, states and amounts, never buyer
// data.
package audit

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/worker"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// Finding kinds the audit reports.
const (
	// MissingHere: the provider holds a document under a reference we have
	// no document for, or one whose addendum names a source other than ours.
	MissingHere = "audit_missing_here"
	// MissingThere: we hold a document the provider acknowledged (pending_dgi,
	// authorized, issued, rejected) in the period, and the provider lacks it.
	MissingThere = "audit_missing_there"
	// Duplicate: the provider holds several documents under one reference.
	Duplicate = "audit_duplicate"
	// StateMismatch: our final state differs from the provider's.
	StateMismatch = "audit_state_mismatch"
	// AmountMismatch: the totals or currencies differ.
	AmountMismatch = "audit_amount_mismatch"
)

// Kinds are every kind an audit run checks, so a run closes those it no
// longer sees.
var Kinds = []string{MissingHere, MissingThere, Duplicate, StateMismatch, AmountMismatch}

// Provider is the e-invoicing provider as the audit reads it
// (invoicy.Client is one): ListPeriod lists the documents issued from one
// calendar day to another, both inclusive; ListNumbers those of one type
// issued on one day with numbers from first to last, both inclusive;
// LookupReferences returns those held under any of the given references,
// whatever their day.
type Provider interface {
	ListPeriod(ctx context.Context, from, to time.Time) ([]fiscal.Held, error)
	ListNumbers(ctx context.Context, day time.Time, typ fiscal.CFEType, first, last int64) ([]fiscal.Held, error)
	LookupReferences(ctx context.Context, references []string) ([]fiscal.Held, error)
}

// Settle is how old a change of ours must be before a run looks it up: a
// change committed up to this long after it was stamped is still seen, and
// each is looked up once.
const Settle = time.Minute

// Defaults of the Config fields a zero value leaves unset.
const (
	// DefaultLookupBatch is how many references one look-up at the provider
	// names (InvoiCy publishes no limit).
	DefaultLookupBatch = 100
	// DefaultWholeDay is how many documents of ours a day may hold and
	// still be listed in one answer. InvoiCy answers a listing in one piece,
	// escaped XML of about 1 KB a document (940 B from the fiscal sandbox),
	// and the adapter reads at most 32 MiB: some 35,000 documents.
	DefaultWholeDay = 10000
	// DefaultNumberRange is how many consecutive numbers one query of a day
	// listed in ranges names: at most that many documents a series, some
	// 5 MB.
	DefaultNumberRange = 5000
)

// Config sets the period an audit covers and how often each day of it is
// listed in full (docs/reconciler-audit.md).
type Config struct {
	// Provider names the provider's row in reconciler.audit_days ("invoicy").
	Provider string
	// Days is how many calendar days the audit covers, ending today: 2 is
	// yesterday and today.
	Days int
	// Location is the calendar the provider dates documents by
	// (America/Montevideo for InvoiCy Uruguay).
	Location *time.Location
	// PageSize is how many of our documents one query reads.
	PageSize int
	// CurrentEvery is how often today is listed in full; zero lists it on
	// every run.
	CurrentEvery time.Duration
	// PastEvery is how often an earlier day of the period is listed in full
	// again once it was listed after it ended; zero lists it on every run.
	PastEvery time.Duration
	// LookupBatch is how many references one look-up names; zero means
	// DefaultLookupBatch.
	LookupBatch int
	// WholeDay is how many documents of ours a day may hold and still be
	// listed in one query; a larger day is listed in number ranges
	// (numbers.go). Zero means DefaultWholeDay.
	WholeDay int
	// NumberRange is how many numbers one query of a day listed in ranges
	// names; zero means DefaultNumberRange.
	NumberRange int
	// Rate paces the listings: after each answer, a run waits until its
	// listings have taken at most Rate documents a second on average, so a
	// large listing spreads over time instead of taking the provider, this
	// service and PostgreSQL at once. A paced listing in ranges names at
	// most a second's worth of numbers a query (NumberRange is lowered to
	// Rate), so its answers come small and evenly spaced instead of
	// NumberRange documents (some 5 MB) at once, and up to one range goes
	// without waiting. Look-ups by reference, which follow the documents
	// that change, are not paced. Zero means no pacing.
	Rate float64
}

// Auditor compares the provider's documents with the invoicer's, read
// through the read-only invoicer connection, and keeps what it knows of
// each day in the reconciler's own schema. Two runs at once only list or
// look up some documents twice.
type Auditor struct {
	provider Provider
	invoicer *store.InvoicerReader
	own      *store.Store
	cfg      Config
	metrics  *Metrics
	pacer    *rate.Limiter // nil: no pacing
}

// New returns an auditor keeping its state through own; cfg.Days and
// cfg.PageSize must be positive and cfg.Location set.
func New(p Provider, invoicer *store.InvoicerReader, own *store.Store, cfg Config, m *Metrics) *Auditor {
	if cfg.LookupBatch <= 0 {
		cfg.LookupBatch = DefaultLookupBatch
	}
	if cfg.WholeDay <= 0 {
		cfg.WholeDay = DefaultWholeDay
	}
	if cfg.NumberRange <= 0 {
		cfg.NumberRange = DefaultNumberRange
	}
	var pacer *rate.Limiter
	if cfg.Rate > 0 {
		cfg.NumberRange = min(cfg.NumberRange, max(1, int(cfg.Rate)))
		pacer = rate.NewLimiter(rate.Limit(cfg.Rate), cfg.NumberRange)
	}
	return &Auditor{provider: p, invoicer: invoicer, own: own, cfg: cfg, metrics: m, pacer: pacer}
}

// pace follows each answer of a listing, of n documents: it beats, since a
// run that gets answers is alive however long it lasts (worker.Beat), then
// waits until n more documents keep the audit within cfg.Rate, and counts
// the wait.
func (a *Auditor) pace(ctx context.Context, n int) error {
	worker.Beat(ctx)
	if a.pacer == nil {
		return nil
	}
	began := time.Now()
	defer func() { a.metrics.paced.Add(time.Since(began).Seconds()) }()
	for burst := a.pacer.Burst(); n > 0; n -= burst {
		if err := a.pacer.WaitN(ctx, min(n, burst)); err != nil {
			return err
		}
	}
	return nil
}

// Name implements reconcile.Checker.
func (a *Auditor) Name() string { return "audit" }

// Kinds implements reconcile.Checker.
func (a *Auditor) Kinds() []string { return Kinds }

// CaseKind says each finding of the audit is also an audit_disagreement
// case (reconcile opens it).
func (a *Auditor) CaseKind() string { return cases.AuditDisagreement }

// Period returns the first and last calendar day, as midnights in
// cfg.Location, that an audit at now covers.
func (a *Auditor) Period(now time.Time) (from, to time.Time) {
	y, m, d := now.In(a.cfg.Location).Date()
	to = time.Date(y, m, d, 0, 0, 0, 0, a.cfg.Location)
	return to.AddDate(0, 0, 1-a.cfg.Days), to
}

// Run audits the period ending on now's day: it lists the days that are
// due (never listed, listed with disagreements, or listed longer ago than
// CurrentEvery or PastEvery; a large today onward, else in full), and looks
// up by reference our documents of the days not listed in full that changed
// from the previous run's mark
// until Settle before now, which becomes the next run's mark. Every
// finding belongs to a day, and a day with findings is listed in full on
// the next run, so a finding that still holds is seen again on every run.
// Nothing is recorded until every listing and look-up succeeded: any error
// means nothing is known and no finding closes.
func (a *Auditor) Run(ctx context.Context, now time.Time) ([]store.Finding, error) {
	from, to := a.Period(now)
	known, err := a.own.AuditDays(ctx, a.cfg.Provider, dateOnly(from), dateOnly(to))
	if err != nil {
		return nil, err
	}
	since, err := a.own.AuditChangedUntil(ctx, a.cfg.Provider)
	if err != nil {
		return nil, err
	}
	r := &auditRun{Auditor: a, reported: map[string]bool{}, listed: map[time.Time]int{}, onward: map[time.Time]bool{},
		highest: map[time.Time]map[int]int64{}, seen: map[time.Time]int{}}
	for _, d := range a.due(from, to, known, now) {
		list := r.listDay
		if d.onward {
			list = r.listOnward
		}
		if err := list(ctx, d.day); err != nil {
			return nil, err
		}
	}
	until := now.Add(-Settle)
	if err := r.lookUpChanged(ctx, from, to, since, until); err != nil {
		return nil, err
	}
	if err := r.record(ctx, now, until); err != nil {
		return nil, err
	}
	return r.out, nil
}

// document is one of our fiscal documents, as the audit reads it.
type document store.Document

func (d document) source() string { return d.SourceKind + " " + d.SourceRef }

func (d document) addendum() string {
	return fiscal.Addendum(d.SourceKind, d.SourceRef, fiscal.Kind(d.Kind))
}

// acknowledged pages through our documents the provider must hold for the
// days from..to: those issued on each day, then those not issued yet.
func (a *Auditor) acknowledged(ctx context.Context, from, to time.Time) ([]document, error) {
	p := a.period(from, to)
	var out []document
	for day := p.FromDate; !day.After(p.ToDate); day = day.AddDate(0, 0, 1) {
		issued, err := a.pages(func(after int64) ([]store.Document, error) {
			return a.invoicer.AuditIssuedOn(ctx, day, after, a.cfg.PageSize)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, issued...)
	}
	unissued, err := a.pages(func(after int64) ([]store.Document, error) {
		return a.invoicer.AuditUnissued(ctx, p, after, a.cfg.PageSize)
	})
	return append(out, unissued...), err
}

// pages reads page after page, each after the last id of the one before,
// until one comes back short.
func (a *Auditor) pages(page func(after int64) ([]store.Document, error)) ([]document, error) {
	var out []document
	var after int64
	for {
		rows, err := page(after)
		if err != nil {
			return nil, err
		}
		a.metrics.read.Add(float64(len(rows)))
		for _, r := range rows {
			out = append(out, document(r))
		}
		if len(rows) < a.cfg.PageSize {
			return out, nil
		}
		after = rows[len(rows)-1].ID
	}
}

// byReference returns our documents under the references the provider
// listed, read in chunks of PageSize.
func (a *Auditor) byReference(ctx context.Context, byRef map[string][]fiscal.Held) (map[string]document, error) {
	refs := make([]string, 0, len(byRef))
	for ref := range byRef {
		refs = append(refs, ref)
	}
	out := make(map[string]document, len(refs))
	for start := 0; start < len(refs); start += a.cfg.PageSize {
		rows, err := a.invoicer.DocumentsByReference(ctx, refs[start:min(start+a.cfg.PageSize, len(refs))])
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.Reference] = document(r)
		}
	}
	return out, nil
}

// dateOnly is t's calendar day as a UTC midnight, so the driver sends that
// day whatever t's location.
func dateOnly(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
