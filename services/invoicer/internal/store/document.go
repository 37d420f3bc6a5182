package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// Document is a fiscal document as recorded: what to send, where its
// emission stands, and the provider's copy once known (nil fields until
// then).
type Document struct {
	ID                   int64
	SourceKind           string // payment or refund
	SourceRef            string
	Kind                 fiscal.Kind
	EventKey             string // the billing event that asked for it
	Reference            string // see fiscal.Reference
	CFEType              fiscal.CFEType
	Status               fiscal.Status
	AmountMinor          int64
	Currency             string
	Buyer                []byte  // fiscal.Buyer as JSON
	Lines                []byte  // []fiscal.Line as JSON
	OriginalSourceRef    *string // the payment a credit note corrects
	ProviderSeries       *string
	ProviderNumber       *int64
	ProviderStatus       *string
	ProviderCAE          *string
	ProviderSecurityCode *string
	ProviderURL          *string
	ProviderCAEFrom      *int64     // the CAE's authorized number range, from
	ProviderCAETo        *int64     // to
	ProviderCAEExpires   *time.Time // the CAE's expiry date
	IssueDate            *time.Time
	Attempts             int32
	UnknownSince         *time.Time // since when a send's outcome is unknown
	LeaseToken           *uuid.UUID
	LeaseExpiresAt       *time.Time
	DueAt                time.Time
	DGIPolls             int32
	LastError            *string
	AttentionReason      *string
	CreatedAt            time.Time
	UpdatedAt            time.Time
	Traceparent          string     // the payment's trace
	Revision             int32      // 0, or how many times it was re-issued
	ReplacesID           *int64     // the document a re-issue replaces
	Refusals             int32      // the provider's consecutive refusals of its send
	AcceptedAt           *time.Time // when ingest accepted its payment or refund; nil for older rows
	ExchangeRateMilli    *int64     // TpoCambio in thousandths, fixed the first time a foreign-currency document is built
}

func documentFromRow(r dbsqlc.InvoicerFiscalDocument) Document {
	return Document{
		ID: r.ID, SourceKind: r.SourceKind, SourceRef: r.SourceRef, Kind: fiscal.Kind(r.Kind), EventKey: r.EventKey,
		Reference: r.Reference, CFEType: fiscal.CFEType(r.CfeType), Status: fiscal.Status(r.Status),
		AmountMinor: r.AmountMinor, Currency: r.Currency, Buyer: r.Buyer, Lines: r.Lines, OriginalSourceRef: r.OriginalSourceRef,
		ProviderSeries: r.ProviderSeries, ProviderNumber: r.ProviderNumber, ProviderStatus: r.ProviderStatus,
		ProviderCAE: r.ProviderCae, ProviderSecurityCode: r.ProviderSecurityCode, ProviderURL: r.ProviderUrl,
		ProviderCAEFrom: r.ProviderCaeFrom, ProviderCAETo: r.ProviderCaeTo, ProviderCAEExpires: r.ProviderCaeExpires,
		IssueDate: r.IssueDate, Attempts: r.Attempts, UnknownSince: r.UnknownSince, LeaseToken: r.LeaseToken,
		LeaseExpiresAt: r.LeaseExpiresAt, DueAt: r.DueAt, DGIPolls: r.DgiPolls, LastError: r.LastError,
		AttentionReason: r.AttentionReason, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Traceparent: r.Traceparent,
		Revision: r.Revision, ReplacesID: r.ReplacesID, Refusals: r.Refusals, AcceptedAt: r.AcceptedAt,
		ExchangeRateMilli: r.ExchangeRateMilli,
	}
}

func documentsFromRows(rows []dbsqlc.InvoicerFiscalDocument) []Document {
	out := make([]Document, len(rows))
	for i, r := range rows {
		out[i] = documentFromRow(r)
	}
	return out
}

// Document returns the document with id, or an error of kind NotFound.
func (q queries) Document(ctx context.Context, id int64) (Document, error) {
	r, err := q.q.DocumentGet(ctx, id)
	if err != nil {
		return Document{}, pg.Interpret(err, "document %d", id)
	}
	return documentFromRow(r), nil
}

// DocumentByReference returns the document with reference ref, or an error
// of kind NotFound when the reference is not ours.
func (q queries) DocumentByReference(ctx context.Context, ref string) (Document, error) {
	r, err := q.q.DocumentGetByReference(ctx, ref)
	if err != nil {
		return Document{}, pg.Interpret(err, "document %s", ref)
	}
	return documentFromRow(r), nil
}

// InvoiceOf returns the invoice recorded for payment, which a credit note
// must reference, or an error of kind NotFound when none is recorded yet.
func (q queries) InvoiceOf(ctx context.Context, payment string) (Document, error) {
	r, err := q.q.DocumentGetInvoiceOf(ctx, payment)
	if err != nil {
		return Document{}, pg.Interpret(err, "invoice of payment %s", payment)
	}
	return documentFromRow(r), nil
}

// CreditedUpTo returns the amount credited on payment by its credit notes
// recorded up to and including document id, leaving out rejected and voided
// ones.
func (q queries) CreditedUpTo(ctx context.Context, payment string, id int64) (int64, error) {
	n, err := q.q.DocumentCreditedUpTo(ctx, &payment, id)
	if err != nil {
		return 0, pg.Interpret(err, "credited on payment %s", payment)
	}
	return n, nil
}

// Documents returns up to limit documents, newest first, with ids below
// before (0: from the newest) and of status (empty: any).
func (q queries) Documents(ctx context.Context, status fiscal.Status, before int64, limit int32) ([]Document, error) {
	var st *string
	if status != "" {
		s := string(status)
		st = &s
	}
	rows, err := q.q.DocumentList(ctx, st, before, limit)
	if err != nil {
		return nil, pg.Interpret(err, "list documents")
	}
	return documentsFromRows(rows), nil
}

// CountByStatus returns how many documents there are in each status that
// has any.
func (q queries) CountByStatus(ctx context.Context) (map[fiscal.Status]int64, error) {
	rows, err := q.q.DocumentCountByStatus(ctx)
	if err != nil {
		return nil, pg.Interpret(err, "count documents")
	}
	out := make(map[fiscal.Status]int64, len(rows))
	for _, r := range rows {
		out[fiscal.Status(r.Status)] = r.Documents
	}
	return out, nil
}

// CountUpTo returns how many documents there are, counting no further than
// limit (a scan of at most limit rows).
func (q queries) CountUpTo(ctx context.Context, limit int64) (int64, error) {
	n, err := q.q.DocumentCountUpTo(ctx, limit)
	if err != nil {
		return 0, pg.Interpret(err, "count documents up to %d", limit)
	}
	return n, nil
}

// CountOpen returns how many documents there are in each status that is
// not final (pending, unknown, pending_dgi, needs_attention) and has any;
// its cost follows the open work, not the table's size.
func (q queries) CountOpen(ctx context.Context) (map[fiscal.Status]int64, error) {
	rows, err := q.q.DocumentCountOpen(ctx)
	if err != nil {
		return nil, pg.Interpret(err, "count open documents")
	}
	out := make(map[fiscal.Status]int64, len(rows))
	for _, r := range rows {
		out[fiscal.Status(r.Status)] = r.Documents
	}
	return out, nil
}

// Estimate is the planner's view of the document table, kept by ANALYZE.
type Estimate struct {
	// Rows is the estimated number of documents; 0 before the first
	// ANALYZE.
	Rows float64
	// ByStatus estimates the documents in each status common enough to
	// appear in ANALYZE's sample.
	ByStatus map[fiscal.Status]float64
}

// EstimateByStatus returns the planner's estimate of the documents, in all
// and per status, without scanning the table.
func (q queries) EstimateByStatus(ctx context.Context) (Estimate, error) {
	r, err := q.q.DocumentStatusEstimates(ctx)
	if err = pg.Interpret(err, "estimate documents by status"); errkind.Is(err, errkind.NotFound) {
		return Estimate{ByStatus: map[fiscal.Status]float64{}}, nil
	}
	if err != nil {
		return Estimate{}, err
	}
	out := Estimate{Rows: r.Rows, ByStatus: make(map[fiscal.Status]float64, len(r.Statuses))}
	for i, st := range r.Statuses {
		if i < len(r.Shares) {
			out.ByStatus[fiscal.Status(st)] = r.Rows * r.Shares[i]
		}
	}
	return out, nil
}

// DueStats is how many documents are due for an attempt and since when the
// oldest waits (now when none is due).
type DueStats struct {
	Due         int64
	OldestDueAt time.Time
}

// DueStats returns how many documents are due now and since when.
func (q queries) DueStats(ctx context.Context) (DueStats, error) {
	r, err := q.q.DocumentDueStats(ctx)
	if err != nil {
		return DueStats{}, pg.Interpret(err, "due documents")
	}
	return DueStats{Due: r.Due, OldestDueAt: r.OldestDueAt}, nil
}
