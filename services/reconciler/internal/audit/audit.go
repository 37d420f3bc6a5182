// Package audit compares what the e-invoicing provider holds for a period
// with invoicer.fiscal_documents: documents the provider holds that we have
// no record of, documents we hold as acknowledged that the provider lacks,
// several provider documents under one reference, and documents whose state
// or amount differ. Each becomes a finding, and an audit_disagreement case
// (subject audit:<finding kind>:<reference>) an operator acknowledges.
//
// Findings name references, types, numbers, states and amounts, never buyer
// data.
package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/pkg/cases"
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

// Provider lists the documents the e-invoicing provider issued from one
// calendar day to another, both inclusive (invoicy.Client does).
type Provider interface {
	ListPeriod(ctx context.Context, from, to time.Time) ([]fiscal.Held, error)
}

// Config sets the period an audit covers.
type Config struct {
	// Days is how many calendar days the audit covers, ending today: 2 is
	// yesterday and today.
	Days int
	// Location is the calendar the provider dates documents by
	// (America/Montevideo for InvoiCy Uruguay).
	Location *time.Location
	// PageSize is how many of our documents one query reads.
	PageSize int
}

// Auditor compares the provider's documents with the invoicer's, read
// through the read-only invoicer connection.
type Auditor struct {
	provider Provider
	invoicer *store.InvoicerReader
	cfg      Config
}

// New returns an auditor; cfg.Days and cfg.PageSize must be positive and
// cfg.Location set.
func New(p Provider, invoicer *store.InvoicerReader, cfg Config) *Auditor {
	return &Auditor{provider: p, invoicer: invoicer, cfg: cfg}
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

// Run audits the period ending on now's day. Our documents are read before
// the provider's list, so one the invoicer marks acknowledged meanwhile is
// already at the provider; the provider's references are looked up here
// after the list, so a document sent meanwhile is already recorded. Any
// error means nothing is known and no finding closes.
func (a *Auditor) Run(ctx context.Context, now time.Time) ([]store.Finding, error) {
	from, to := a.Period(now)
	ours, err := a.acknowledged(ctx, from, to)
	if err != nil {
		return nil, err
	}
	held, err := a.provider.ListPeriod(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("list provider documents: %w", err)
	}
	byRef := groupByReference(held)
	known, err := a.byReference(ctx, byRef)
	if err != nil {
		return nil, err
	}
	out := compareHeld(byRef, known)
	for _, d := range ours {
		if len(byRef[d.Reference]) == 0 {
			out = append(out, store.Finding{Kind: MissingThere, Reference: d.Reference, Detail: fmt.Sprintf(
				"we hold %s %s as %s; the provider lists nothing under it for %s to %s",
				d.Kind, d.source(), d.Status, from.Format(time.DateOnly), to.Format(time.DateOnly))})
		}
	}
	return out, nil
}

// document is one of our fiscal documents, as the audit reads it.
type document store.Document

func (d document) source() string { return d.SourceKind + " " + d.SourceRef }

func (d document) addendum() string {
	return fiscal.Addendum(d.SourceKind, d.SourceRef, fiscal.Kind(d.Kind))
}

// acknowledged pages through our documents the provider must hold for the
// days from..to.
func (a *Auditor) acknowledged(ctx context.Context, from, to time.Time) ([]document, error) {
	p := store.AuditPeriod{
		FromDate: dateOnly(from), ToDate: dateOnly(to),
		CreatedFrom: from, CreatedTo: to.AddDate(0, 0, 1),
	}
	var out []document
	var after int64
	for {
		rows, err := a.invoicer.AuditPeriodDocuments(ctx, p, after, a.cfg.PageSize)
		if err != nil {
			return nil, err
		}
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
