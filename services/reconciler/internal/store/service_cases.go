package store

import (
	"context"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"
)

// Cases lists ingest's cases that f selects, oldest first. Its errors are
// the database's.
func (r *IngestReader) Cases(ctx context.Context, f CaseFilter) ([]Case, error) {
	rows, err := r.q.IngestCasesList(ctx, f.Status, f.Kind, int32(f.Limit))
	if err != nil {
		return nil, pg.Interpret(err, "list ingest cases")
	}
	out := make([]Case, len(rows))
	for i, row := range rows {
		out[i] = caseFrom("ingest", dbsqlc.ReconcilerCase(row))
	}
	return out, nil
}

// Case returns ingest's case id; errkind.NotFound when there is none.
func (r *IngestReader) Case(ctx context.Context, id int64) (Case, error) {
	row, err := r.q.IngestCaseGet(ctx, id)
	if err != nil {
		return Case{}, pg.Interpret(err, "case ingest-%d", id)
	}
	return caseFrom("ingest", dbsqlc.ReconcilerCase(row)), nil
}

// SubjectsWithOpenCase returns the subjects among subjects that have an
// open ingest case, of any kind. Its errors are the database's.
func (r *IngestReader) SubjectsWithOpenCase(ctx context.Context, subjects []string) ([]string, error) {
	out, err := r.q.IngestCasesOpenAbout(ctx, subjects)
	return out, pg.Interpret(err, "ingest cases about")
}

// OpenCaseStat counts ingest's open cases of kind; ok is false when none
// is open. Its errors are the database's.
func (r *IngestReader) OpenCaseStat(ctx context.Context, kind string) (CaseStat, bool, error) {
	rows, err := r.q.IngestCasesOpenStats(ctx, kind)
	if err != nil || len(rows) == 0 {
		return CaseStat{Kind: kind}, false, pg.Interpret(err, "count ingest cases")
	}
	return CaseStat{Kind: kind, Open: rows[0].Open, Oldest: rows[0].Oldest}, true, nil
}

// Cases lists the invoicer's cases that f selects, oldest first. Its
// errors are the database's.
func (r *InvoicerReader) Cases(ctx context.Context, f CaseFilter) ([]Case, error) {
	rows, err := r.q.InvoicerCasesList(ctx, f.Status, f.Kind, int32(f.Limit))
	if err != nil {
		return nil, pg.Interpret(err, "list invoicer cases")
	}
	out := make([]Case, len(rows))
	for i, row := range rows {
		out[i] = caseFrom("invoicer", dbsqlc.ReconcilerCase(row))
	}
	return out, nil
}

// Case returns the invoicer's case id; errkind.NotFound when there is none.
func (r *InvoicerReader) Case(ctx context.Context, id int64) (Case, error) {
	row, err := r.q.InvoicerCaseGet(ctx, id)
	if err != nil {
		return Case{}, pg.Interpret(err, "case invoicer-%d", id)
	}
	return caseFrom("invoicer", dbsqlc.ReconcilerCase(row)), nil
}

// SourcesWithOpenCase returns the ids among ids of sourceKind (payment or
// refund) that an open invoicer case is about, through its document or its
// PSP ids. Its errors are the database's.
func (r *InvoicerReader) SourcesWithOpenCase(ctx context.Context, sourceKind string, ids []string) ([]string, error) {
	out, err := r.q.InvoicerCasesOpenAboutSources(ctx, sourceKind, ids)
	return out, pg.Interpret(err, "invoicer cases about")
}

// OpenCaseStat counts the invoicer's open cases of kind; ok is false when
// none is open. Its errors are the database's.
func (r *InvoicerReader) OpenCaseStat(ctx context.Context, kind string) (CaseStat, bool, error) {
	rows, err := r.q.InvoicerCasesOpenStats(ctx, kind)
	if err != nil || len(rows) == 0 {
		return CaseStat{Kind: kind}, false, pg.Interpret(err, "count invoicer cases")
	}
	return CaseStat{Kind: kind, Open: rows[0].Open, Oldest: rows[0].Oldest}, true, nil
}
