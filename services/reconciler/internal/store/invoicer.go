package store

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"
)

// InvoicerReader reads the invoicer schema; the reconciler opens its
// connection read-only.
type InvoicerReader struct{ q *dbsqlc.Queries }

// NewInvoicerReader returns a reader of the invoicer schema through db.
func NewInvoicerReader(db DB) *InvoicerReader { return &InvoicerReader{q: dbsqlc.New(db)} }

// Document is a fiscal document as the audit compares it with the
// provider's: never buyer data.
type Document struct {
	ID                          int64
	Reference                   string
	SourceKind, SourceRef, Kind string
	Status                      string
	AmountMinor                 int64
	Currency                    string
}

// StuckDocument is a document in needs_attention too long, or whose
// emitter's claim expired.
type StuckDocument struct {
	Reference, Status string
	Reason            string // the attention reason; "" when none was given
	ClaimExpired      bool   // an emitter claimed it and its claim expired
}

// AuditPeriod selects the documents the provider must hold for an audit of
// the calendar days FromDate to ToDate: acknowledged ones issued on those
// days, or not issued yet and created from CreatedFrom until before
// CreatedTo.
type AuditPeriod struct {
	FromDate, ToDate       time.Time // UTC midnights of the calendar days
	CreatedFrom, CreatedTo time.Time
}

// ParkedOutbox returns at most limit parked rows of the invoicer's outbox,
// oldest first. Its errors are the database's.
func (r *InvoicerReader) ParkedOutbox(ctx context.Context, limit int) ([]ParkedEvent, error) {
	rows, err := r.q.InvoicerOutboxParked(ctx, int32(limit))
	if err != nil {
		return nil, pg.Interpret(err, "invoicer outbox")
	}
	out := make([]ParkedEvent, len(rows))
	for i, row := range rows {
		out[i] = ParkedEvent{EventKey: row.EventKey, EventType: row.EventType, Reason: row.Reason}
	}
	return out, nil
}

// StuckDocuments returns at most limit documents, oldest first, in
// needs_attention since before attentionBefore, or claimed by an emitter
// whose claim expired before claimExpiredBefore. Its errors are the
// database's.
func (r *InvoicerReader) StuckDocuments(ctx context.Context, claimExpiredBefore, attentionBefore time.Time, limit int) ([]StuckDocument, error) {
	rows, err := r.q.DocumentsStuck(ctx, &claimExpiredBefore, attentionBefore, int32(limit))
	if err != nil {
		return nil, pg.Interpret(err, "documents")
	}
	out := make([]StuckDocument, len(rows))
	for i, row := range rows {
		out[i] = StuckDocument{Reference: row.Reference, Status: row.Status, Reason: row.Reason, ClaimExpired: row.ClaimExpired}
	}
	return out, nil
}

// SourcesWithValidDocument returns the subset of sourceRefs of sourceKind
// that have a valid document of kind: authorized or issued (a rejected one
// never counts). Its errors are the database's.
func (r *InvoicerReader) SourcesWithValidDocument(ctx context.Context, sourceKind, kind string, sourceRefs []string) ([]string, error) {
	refs, err := r.q.DocumentsValidForSources(ctx, sourceKind, kind, sourceRefs)
	if err != nil {
		return nil, pg.Interpret(err, "read valid %s documents", kind)
	}
	return refs, nil
}

// FirstDocumentCreatedFrom returns the id from which every document was
// created at or after t: the highest id plus one when none was. Ids follow
// the order documents were created in, so it searches the primary key by
// halves (a score of one-row reads over a million documents); transactions
// that commit out of their start's order leave that order a little rough,
// so the id may be a few documents off. Its errors are the database's.
func (r *InvoicerReader) FirstDocumentCreatedFrom(ctx context.Context, t time.Time) (int64, error) {
	bounds, err := r.q.DocumentIDBounds(ctx)
	if err != nil {
		return 0, pg.Interpret(err, "read the documents' ids")
	}
	if bounds.Highest == 0 {
		return 1, nil // no document yet
	}
	lo, hi := bounds.Lowest, bounds.Highest+1 // the answer lies in [lo, hi]
	for lo < hi {
		mid := lo + (hi-lo)/2
		doc, err := r.q.DocumentFromID(ctx, mid)
		if err != nil {
			return 0, pg.Interpret(err, "read a document's creation time")
		}
		if doc.CreatedAt.Before(t) {
			lo = doc.ID + 1
		} else {
			hi = mid // every document from mid on was created at or after doc
		}
	}
	return lo, nil
}

// ValidRange is what one read of DocumentsValidAfter found.
type ValidRange struct {
	LastID  int64     // the last document id read; the next read starts after it
	Reached time.Time // the latest creation time among the documents read
	Scanned int       // how many documents were read (fewer than asked: the newest was reached)
	Refs    []string  // the source refs of those that are valid documents of the kind asked
}

// DocumentsValidAfter reads the next scan documents after afterID, in id
// order, and returns which of them are valid documents of kind for
// sourceKind. Its errors are the database's.
func (r *InvoicerReader) DocumentsValidAfter(ctx context.Context, sourceKind, kind string, afterID int64, scan int) (ValidRange, error) {
	row, err := r.q.DocumentsValidAfterID(ctx, dbsqlc.DocumentsValidAfterIDParams{
		SourceKind: sourceKind, Kind: kind, AfterID: afterID, Scan: int32(scan)})
	if err != nil {
		return ValidRange{}, pg.Interpret(err, "read %s documents in creation order", kind)
	}
	return ValidRange{LastID: row.LastID, Reached: row.Reached, Scanned: int(row.Scanned), Refs: row.ValidRefs}, nil
}

// DocumentStatuses returns the status of the document of kind of each of
// sourceRefs that has one, by source ref. Its errors are the database's.
func (r *InvoicerReader) DocumentStatuses(ctx context.Context, sourceKind, kind string, sourceRefs []string) (map[string]string, error) {
	rows, err := r.q.DocumentsStatusForSources(ctx, sourceKind, kind, sourceRefs)
	if err != nil {
		return nil, pg.Interpret(err, "read %s statuses", kind)
	}
	out := make(map[string]string, len(rows))
	for _, row := range rows {
		out[row.SourceRef] = row.Status
	}
	return out, nil
}

// AuditIssuedOn returns one page of at most limit acknowledged documents
// issued on day (a UTC midnight), in id order, with ids above afterID. Its
// errors are the database's.
func (r *InvoicerReader) AuditIssuedOn(ctx context.Context, day time.Time, afterID int64, limit int) ([]Document, error) {
	rows, err := r.q.DocumentsAuditIssuedOn(ctx, day, afterID, int32(limit))
	if err != nil {
		return nil, pg.Interpret(err, "read our documents of a day")
	}
	return documents(rows), nil
}

// NumberBand is the lowest and highest number the provider gave our
// documents of one CFE type issued on a day.
type NumberBand struct {
	CFEType         int
	Lowest, Highest int64
}

// AuditNumberBands returns, type by type, the numbers of our documents
// issued on day (a UTC midnight) that the provider numbered. Its errors
// are the database's.
func (r *InvoicerReader) AuditNumberBands(ctx context.Context, day time.Time) ([]NumberBand, error) {
	rows, err := r.q.DocumentsAuditNumberBands(ctx, day)
	if err != nil {
		return nil, pg.Interpret(err, "read the numbers of our documents of a day")
	}
	out := make([]NumberBand, len(rows))
	for i, row := range rows {
		out[i] = NumberBand{CFEType: int(row.CfeType), Lowest: row.Lowest, Highest: row.Highest}
	}
	return out, nil
}

// AuditUnissued returns one page of at most limit acknowledged documents
// with no issue date yet, created in p's CreatedFrom..CreatedTo, in id
// order, with ids above afterID. Its errors are the database's.
func (r *InvoicerReader) AuditUnissued(ctx context.Context, p AuditPeriod, afterID int64, limit int) ([]Document, error) {
	rows, err := r.q.DocumentsAuditUnissued(ctx, dbsqlc.DocumentsAuditUnissuedParams{
		CreatedFrom: p.CreatedFrom, CreatedTo: p.CreatedTo, AfterID: afterID, PageSize: int32(limit),
	})
	if err != nil {
		return nil, pg.Interpret(err, "read our documents not issued yet")
	}
	return documents(rows), nil
}

// documents converts rows of any query reading Document's columns.
func documents[R ~struct {
	ID          int64
	Reference   string
	SourceKind  string
	SourceRef   string
	Kind        string
	Status      string
	AmountMinor int64
	Currency    string
}](rows []R) []Document {
	out := make([]Document, len(rows))
	for i, row := range rows {
		out[i] = Document(row)
	}
	return out
}

// DocumentsByReference returns the documents, in any status, under the
// provider references refs. Its errors are the database's.
func (r *InvoicerReader) DocumentsByReference(ctx context.Context, refs []string) ([]Document, error) {
	rows, err := r.q.DocumentsAuditByReferences(ctx, refs)
	if err != nil {
		return nil, pg.Interpret(err, "look up provider references")
	}
	return documents(rows), nil
}

// ChangedDocument is one of our documents the audit looks up because it
// changed, with the day it belongs to.
type ChangedDocument struct {
	Document
	IssueDate *time.Time // nil when the provider has not dated it yet
	CreatedAt time.Time
	ChangedAt time.Time // when a field the audit compares last changed
}

// AuditChangedDocuments returns one page of at most limit documents of p
// whose audited fields changed at or after after and before before, in
// (ChangedAt, ID) order after the cursor (after, afterID). Its errors are
// the database's.
func (r *InvoicerReader) AuditChangedDocuments(ctx context.Context, p AuditPeriod, after time.Time, afterID int64, before time.Time, limit int) ([]ChangedDocument, error) {
	rows, err := r.q.DocumentsAuditChanged(ctx, dbsqlc.DocumentsAuditChangedParams{
		AfterChangedAt: after, Before: before, AfterID: afterID, FromDate: p.FromDate, ToDate: p.ToDate,
		CreatedFrom: p.CreatedFrom, CreatedTo: p.CreatedTo, PageSize: int32(limit),
	})
	if err != nil {
		return nil, pg.Interpret(err, "read our changed documents")
	}
	out := make([]ChangedDocument, len(rows))
	for i, row := range rows {
		out[i] = ChangedDocument{
			Document: Document{ID: row.ID, Reference: row.Reference, SourceKind: row.SourceKind, SourceRef: row.SourceRef,
				Kind: row.Kind, Status: row.Status, AmountMinor: row.AmountMinor, Currency: row.Currency},
			IssueDate: row.IssueDate, CreatedAt: row.CreatedAt, ChangedAt: row.AuditChangedAt,
		}
	}
	return out, nil
}
