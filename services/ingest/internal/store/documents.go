package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// Document is a fiscal document of one of ingest's payments or refunds as
// the invoicer last announced it: its status and the buyer-facing result
// (CAE, series, number, security code, verification link).
type Document struct {
	Reference    string // the invoicer's deterministic reference
	SourceKind   string // payment or refund
	SourceRef    string
	PaymentRef   string // the payment it belongs to
	Kind         string // invoice or credit_note
	Revision     int32
	Status       string
	CFEType      int32
	Series       string
	Number       int64
	CAEID        string
	CAEFrom      int64
	CAETo        int64
	CAEExpires   *time.Time
	SecurityCode string
	VerifyURL    string
	IssueDate    *time.Time
	AmountMinor  int64
	Currency     string
	Reason       string
	EventKey     string    // the announcement it was last updated from
	OccurredAt   time.Time // when that announcement was made
}

// OrderRef names the order a payment belongs to.
type OrderRef struct {
	ID              uuid.UUID
	MerchantOrderID string
}

// RecordDocument records d, unless the document is held from a later
// announcement already.
func (t *Tx) RecordDocument(ctx context.Context, d Document) error {
	return recordDocument(ctx, t.q, d)
}

// RecordDocument is Tx.RecordDocument outside a transaction: one statement,
// committed on its own (twice when another transaction inserted the
// document meanwhile: upsertAlone).
func (s *Store) RecordDocument(ctx context.Context, d Document) error {
	return pg.Interpret(upsertAlone(ctx, s.q, []documentRow{rowOf(d)}), "record document %s", d.Reference)
}

func recordDocument(ctx context.Context, q *dbsqlc.Queries, d Document) error {
	return pg.Interpret(upsertDocuments(ctx, q, []documentRow{rowOf(d)}), "record document %s", d.Reference)
}

// RecordDocuments is RecordDocument for many documents in one statement,
// committed on its own. Of two announcements of one document the later
// (occurred_at; of equal ones the last given) is the one written, as when
// they are recorded one after the other.
func (s *Store) RecordDocuments(ctx context.Context, docs []Document) error {
	latest := map[string]int{}
	rows := make([]documentRow, 0, len(docs))
	for _, d := range docs {
		i, seen := latest[d.Reference]
		if !seen {
			latest[d.Reference] = len(rows)
			rows = append(rows, rowOf(d))
		} else if !d.OccurredAt.Before(rows[i].OccurredAt) {
			rows[i] = rowOf(d)
		}
	}
	return pg.Interpret(upsertAlone(ctx, s.q, rows), "record %d documents", len(rows))
}

// upsertDocuments writes rows, of distinct references, in one statement.
func upsertDocuments(ctx context.Context, q *dbsqlc.Queries, rows []documentRow) error {
	body, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	refs := make([]string, len(rows))
	for i, r := range rows {
		refs[i] = r.Reference
	}
	return q.DocumentUpsertMany(ctx, body, refs)
}

// upsertAlone is upsertDocuments in a statement committed on its own: one
// that met a document another transaction inserted meanwhile (a unique
// violation) runs once more, and then updates it.
func upsertAlone(ctx context.Context, q *dbsqlc.Queries, rows []documentRow) error {
	err := upsertDocuments(ctx, q, rows)
	if pg.IsUniqueViolation(err) {
		err = upsertDocuments(ctx, q, rows)
	}
	return err
}

// documentRow is a Document as DocumentUpsertMany reads it: keyed by column
// name, with its dates as days.
type documentRow struct {
	Reference    string    `json:"reference"`
	SourceKind   string    `json:"source_kind"`
	SourceRef    string    `json:"source_ref"`
	PaymentRef   string    `json:"payment_ref"`
	Kind         string    `json:"kind"`
	Revision     int32     `json:"revision"`
	Status       string    `json:"status"`
	CFEType      int32     `json:"cfe_type"`
	Series       string    `json:"series"`
	Number       int64     `json:"number"`
	CAEID        string    `json:"cae_id"`
	CAEFrom      int64     `json:"cae_from"`
	CAETo        int64     `json:"cae_to"`
	CAEExpires   *day      `json:"cae_expires"`
	SecurityCode string    `json:"security_code"`
	VerifyURL    string    `json:"verify_url"`
	IssueDate    *day      `json:"issue_date"`
	AmountMinor  int64     `json:"amount_minor"`
	Currency     string    `json:"currency"`
	Reason       string    `json:"reason"`
	EventKey     string    `json:"event_key"`
	OccurredAt   time.Time `json:"occurred_at"`
}

// rowOf is d as DocumentUpsertMany reads it. Its time is cut to the
// microsecond, as PostgreSQL keeps it; JSON's nanoseconds would be rounded,
// and could order two announcements of one microsecond otherwise than the
// binary protocol did.
func rowOf(d Document) documentRow {
	return documentRow{Reference: d.Reference, SourceKind: d.SourceKind, SourceRef: d.SourceRef, PaymentRef: d.PaymentRef,
		Kind: d.Kind, Revision: d.Revision, Status: d.Status, CFEType: d.CFEType, Series: d.Series, Number: d.Number,
		CAEID: d.CAEID, CAEFrom: d.CAEFrom, CAETo: d.CAETo, CAEExpires: (*day)(d.CAEExpires), SecurityCode: d.SecurityCode,
		VerifyURL: d.VerifyURL, IssueDate: (*day)(d.IssueDate), AmountMinor: d.AmountMinor, Currency: d.Currency,
		Reason: d.Reason, EventKey: d.EventKey, OccurredAt: d.OccurredAt.Truncate(time.Microsecond)}
}

// day is a date column's value: the calendar day of the time, as given.
type day time.Time

// MarshalJSON writes the day as YYYY-MM-DD.
func (d day) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Time(d).Format(time.DateOnly))
}

// OrderOfPayment returns the order payment id belongs to; ok is false when
// ingest holds no such payment.
func (t *Tx) OrderOfPayment(ctx context.Context, paymentID string) (ref OrderRef, ok bool, err error) {
	row, err := t.q.OrderOfPayment(ctx, paymentID)
	if err != nil {
		err = pg.Interpret(err, "order of payment %s", paymentID)
		if errkind.Is(err, errkind.NotFound) {
			return OrderRef{}, false, nil
		}
		return OrderRef{}, false, err
	}
	return OrderRef{ID: row.ID, MerchantOrderID: row.MerchantOrderID}, true, nil
}

// OrderDocuments returns the documents of order id's payments and refunds:
// invoices first, then credit notes, each oldest first.
func (s *Store) OrderDocuments(ctx context.Context, id uuid.UUID) ([]Document, error) {
	rows, err := s.q.DocumentListByOrder(ctx, id)
	if err != nil {
		return nil, pg.Interpret(err, "documents of order %s", id)
	}
	out := make([]Document, len(rows))
	for i, r := range rows {
		out[i] = Document{Reference: r.Reference, SourceKind: r.SourceKind, SourceRef: r.SourceRef, PaymentRef: r.PaymentRef,
			Kind: r.Kind, Revision: r.Revision, Status: r.Status, CFEType: r.CfeType, Series: r.Series, Number: r.Number,
			CAEID: r.CaeID, CAEFrom: r.CaeFrom, CAETo: r.CaeTo, CAEExpires: r.CaeExpires, SecurityCode: r.SecurityCode,
			VerifyURL: r.VerifyUrl, IssueDate: r.IssueDate, AmountMinor: r.AmountMinor, Currency: r.Currency,
			Reason: r.Reason, EventKey: r.EventKey, OccurredAt: r.OccurredAt}
	}
	return out, nil
}
