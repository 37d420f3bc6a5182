package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/handoff"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// NewDocument is a document a billing event asks for, to record.
type NewDocument struct {
	SourceKind        string
	SourceRef         string
	Kind              fiscal.Kind
	EventKey          string
	References        []string // fiscal.References: it takes the first no other source holds
	CFEType           fiscal.CFEType
	AmountMinor       int64
	Currency          string
	Buyer             []byte  // fiscal.Buyer as JSON
	Lines             []byte  // []fiscal.Line as JSON
	OriginalSourceRef *string // the payment a credit note corrects
	Traceparent       string
	AcceptedAt        *time.Time // when ingest accepted the payment or refund (the event's occurred_at)
}

// Recorded is what recording one NewDocument did.
type Recorded struct {
	ID        int64
	Reference string // the one of its References it took
	// Err is nil when the document was recorded, ErrDuplicate when its
	// event had been recorded before (nothing is inserted), and otherwise
	// the statement's error (one of kind Invalid when every reference is
	// held by other sources), after which the transaction must not commit.
	Err error
}

// RecordDocuments inserts docs, in order; out[i] says what became of
// docs[i]. Each takes the first of its References no other source's
// document holds, so a reference collision takes the next reference of the
// sequence instead of failing. They go in one statement, unless two of
// different sources share a reference (rare: the references are hashes),
// which one statement could not tell apart: then one statement each.
func (q queries) RecordDocuments(ctx context.Context, docs []NewDocument) []Recorded {
	if shareReferences(docs) {
		return q.recordEach(ctx, docs)
	}
	out, _ := q.recordTogether(ctx, docs, nil)
	return out
}

// Handoff is where documents recorded by this process go, claimed, for
// its emission loop (package handoff).
type Handoff = handoff.Handoff[Handed]

// Handed is a document recorded claimed for the emission loop: as
// recorded, with the database's clock then and the pod's (time.Now) once
// the record returned.
type Handed struct {
	Document Document
	DBNow    time.Time
	Recorded time.Time
}

// NewHandoff returns a handoff of at most max documents, each recorded
// under a lease of lease.
func NewHandoff(lease time.Duration, max int) *Handoff { return handoff.New[Handed](lease, max) }

// UseHandoff makes the documents RecordDocuments records in one statement
// go to h, claimed, while it has room; call it before the store is used.
func (s *Store) UseHandoff(h *Handoff) { s.handoff = h }

// ReleaseHandoff ends the claims of the pending documents recorded under a
// handoff's token, for a process that stops: the next claim takes them at
// once. It returns how many it released.
func (s *Store) ReleaseHandoff(ctx context.Context, token uuid.UUID) (int64, error) {
	n, err := s.q.DocumentReleaseHandoff(ctx, &token)
	return n, pg.Interpret(err, "release the handoff's documents")
}

// recordHanded is recordTogether, the documents recorded claimed and
// handed off when the handoff has room for them.
func (s *Store) recordHanded(ctx context.Context, docs []NewDocument) []Recorded {
	n := len(distinctSources(docs))
	if s.handoff == nil || !s.handoff.Reserve(n) {
		out, _ := s.recordTogether(ctx, docs, nil)
		return out
	}
	at := time.Now()
	out, handed := s.recordTogether(ctx, docs, s.handoff)
	s.handoff.Fill(n, handed, at)
	return out
}

// distinctSources returns the first document of each source in docs, in
// order: the ones a statement inserts.
func distinctSources(docs []NewDocument) []NewDocument {
	seen := make(map[source]bool, len(docs))
	var out []NewDocument
	for _, d := range docs {
		if !seen[d.source()] {
			seen[d.source()] = true
			out = append(out, d)
		}
	}
	return out
}

// RecordDocuments is Tx.RecordDocuments outside a transaction, all or
// nothing: one statement commits on its own, and a batch that needs one
// statement each runs them in a transaction of its own. On an error
// nothing is recorded and every document has it.
func (s *Store) RecordDocuments(ctx context.Context, docs []NewDocument) []Recorded {
	if !shareReferences(docs) {
		return s.recordHanded(ctx, docs)
	}
	var out []Recorded
	err := s.InTx(ctx, func(tx *Tx) error {
		out = tx.recordEach(ctx, docs)
		for _, r := range out {
			if r.Err != nil && !errors.Is(r.Err, ErrDuplicate) {
				return r.Err
			}
		}
		return nil
	})
	if err != nil {
		out = make([]Recorded, len(docs))
		for i := range out {
			out[i].Err = err
		}
	}
	return out
}

// source is what the table keeps one document of: a source and a kind.
type source struct{ kind, ref, docKind string }

func (d NewDocument) source() source { return source{d.SourceKind, d.SourceRef, string(d.Kind)} }

// shareReferences reports whether two of docs of different sources have a
// reference in common.
func shareReferences(docs []NewDocument) bool {
	holder := map[string]source{}
	for _, d := range docs {
		for _, ref := range d.References {
			if h, held := holder[ref]; held && h != d.source() {
				return true
			}
			holder[ref] = d.source()
		}
	}
	return false
}

// newRow is a NewDocument as DocumentRecordMany reads it, keyed by column
// name; its time cut to the microsecond, as PostgreSQL keeps it.
type newRow struct {
	SourceKind        string          `json:"source_kind"`
	SourceRef         string          `json:"source_ref"`
	Kind              string          `json:"kind"`
	EventKey          string          `json:"event_key"`
	Candidates        []string        `json:"candidates"`
	CFEType           int32           `json:"cfe_type"`
	AmountMinor       int64           `json:"amount_minor"`
	Currency          string          `json:"currency"`
	Buyer             json.RawMessage `json:"buyer"`
	Lines             json.RawMessage `json:"lines"`
	OriginalSourceRef *string         `json:"original_source_ref"`
	Traceparent       string          `json:"traceparent"`
	AcceptedAt        *time.Time      `json:"accepted_at"`
}

func (d NewDocument) row() newRow {
	return newRow{SourceKind: d.SourceKind, SourceRef: d.SourceRef, Kind: string(d.Kind), EventKey: d.EventKey,
		Candidates: d.References, CFEType: int32(d.CFEType), AmountMinor: d.AmountMinor, Currency: d.Currency,
		Buyer: d.Buyer, Lines: d.Lines, OriginalSourceRef: d.OriginalSourceRef, Traceparent: d.Traceparent,
		AcceptedAt: micros(d.AcceptedAt)}
}

// recordTogether inserts docs in one statement. The first of a source is
// the one inserted, when its event is new; any other is ErrDuplicate. An
// error is every document's. With h, the documents are inserted claimed
// under its token and returned as handed.
func (q queries) recordTogether(ctx context.Context, docs []NewDocument, h *Handoff) ([]Recorded, []Handed) {
	out := make([]Recorded, len(docs))
	rows := make([]newRow, 0, len(docs))
	for _, d := range distinctSources(docs) {
		rows = append(rows, d.row())
	}
	body, err := json.Marshal(rows)
	var token *uuid.UUID
	var lease float64
	if h != nil {
		t := h.Token()
		token, lease = &t, h.Lease().Seconds()
	}
	var inserted []dbsqlc.DocumentRecordManyRow
	if err == nil {
		inserted, err = q.q.DocumentRecordMany(ctx, token, lease, body)
	}
	if err != nil {
		err = pg.Interpret(err, "record %d documents", len(docs))
		for i := range out {
			out[i].Err = err
		}
		return out, nil
	}
	got := map[source]Recorded{}
	var handed []Handed
	for _, row := range inserted {
		r := row.InvoicerFiscalDocument
		got[source{r.SourceKind, r.SourceRef, r.Kind}] = Recorded{ID: r.ID, Reference: r.Reference}
		if h != nil {
			handed = append(handed, Handed{Document: documentFromRow(r), DBNow: row.DbNow, Recorded: time.Now()})
		}
	}
	for i, d := range docs {
		r, ok := got[d.source()]
		if !ok {
			r.Err = ErrDuplicate
		}
		delete(got, d.source())
		out[i] = r
	}
	return out, handed
}

// recordEach inserts docs one statement each, so each sees the ones
// before it.
func (q queries) recordEach(ctx context.Context, docs []NewDocument) []Recorded {
	out := make([]Recorded, len(docs))
	for i := range docs {
		rec, _ := q.recordTogether(ctx, docs[i:i+1], nil)
		out[i] = rec[0]
	}
	return out
}

// Adoption moves a document forward to the provider's status, with the
// provider's fields where known (nil keeps the recorded value).
type Adoption struct {
	ID                   int64
	FromStatus           fiscal.Status // applied only if the status is still this
	Status               fiscal.Status
	ProviderStatus       *string
	ProviderSeries       *string
	ProviderNumber       *int64
	ProviderCAE          *string
	ProviderSecurityCode *string
	ProviderURL          *string
	ProviderCAEFrom      *int64
	ProviderCAETo        *int64
	ProviderCAEExpires   *time.Time
	IssueDate            *time.Time
}

// CAERange is h's CAE range and expiry as a row's nullable columns: nil
// where the provider did not tell.
func CAERange(h fiscal.Held) (from, to *int64, expires *time.Time) {
	if h.CAEFrom != 0 {
		from = &h.CAEFrom
	}
	if h.CAETo != 0 {
		to = &h.CAETo
	}
	if !h.CAEExpires.IsZero() {
		expires = &h.CAEExpires
	}
	return from, to, expires
}

// AdoptStatus applies a (from a provider event or an operator) and voids
// any lease; it reports false when the status was no longer a.FromStatus.
func (q queries) AdoptStatus(ctx context.Context, a Adoption) (bool, error) {
	n, err := q.q.DocumentAdoptStatus(ctx, dbsqlc.DocumentAdoptStatusParams{
		ID: a.ID, FromStatus: string(a.FromStatus), Status: string(a.Status), ProviderStatus: a.ProviderStatus,
		ProviderSeries: a.ProviderSeries, ProviderNumber: a.ProviderNumber, ProviderCae: a.ProviderCAE,
		ProviderSecurityCode: a.ProviderSecurityCode, ProviderUrl: a.ProviderURL, IssueDate: a.IssueDate,
		ProviderCaeFrom: a.ProviderCAEFrom, ProviderCaeTo: a.ProviderCAETo, ProviderCaeExpires: a.ProviderCAEExpires,
	})
	if err != nil {
		return false, pg.Interpret(err, "adopt status of document %d", a.ID)
	}
	return n > 0, nil
}

// MakeDue asks the emission loop to look at document id now, if its status
// is still from; it reports whether it was.
func (q queries) MakeDue(ctx context.Context, id int64, from fiscal.Status) (bool, error) {
	n, err := q.q.DocumentMakeDue(ctx, id, string(from))
	if err != nil {
		return false, pg.Interpret(err, "make document %d due", id)
	}
	return n > 0, nil
}

// Retry puts document id, parked in needs_attention, back in the emission
// loop as never sent; it reports false when it was not in needs_attention.
func (q queries) Retry(ctx context.Context, id int64) (bool, error) {
	n, err := q.q.DocumentRetry(ctx, id)
	if err != nil {
		return false, pg.Interpret(err, "retry document %d", id)
	}
	return n > 0, nil
}

// Resolution is an operator's decision on a document.
type Resolution struct {
	DocumentID int64
	Action     string // adopt, retry or void
	Actor      string
	Reason     string
	FromStatus fiscal.Status
	ToStatus   fiscal.Status
	At         time.Time // set by the database; ignored by InsertResolution
}

// InsertResolution records r; a document that does not exist is an error of
// kind Invalid.
func (q queries) InsertResolution(ctx context.Context, r Resolution) error {
	err := q.q.ResolutionInsert(ctx, dbsqlc.ResolutionInsertParams{DocumentID: r.DocumentID, Action: r.Action,
		Actor: r.Actor, Reason: r.Reason, FromStatus: string(r.FromStatus), ToStatus: string(r.ToStatus)})
	return pg.Interpret(err, "resolution of document %d", r.DocumentID)
}

// Resolutions returns the resolutions recorded for document id, oldest
// first.
func (q queries) Resolutions(ctx context.Context, id int64) ([]Resolution, error) {
	rows, err := q.q.ResolutionListByDocument(ctx, id)
	if err != nil {
		return nil, pg.Interpret(err, "resolutions of document %d", id)
	}
	out := make([]Resolution, len(rows))
	for i, r := range rows {
		out[i] = Resolution{DocumentID: r.DocumentID, Action: r.Action, Actor: r.Actor, Reason: r.Reason,
			FromStatus: fiscal.Status(r.FromStatus), ToStatus: fiscal.Status(r.ToStatus), At: r.CreatedAt}
	}
	return out, nil
}
