package store

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// Claim is a batch of documents claimed under one token.
type Claim struct {
	Documents []Document
	// Now is the database's clock when the claim was made (zero when
	// nothing was claimed): the one clock to compare the documents' times
	// (unknown since, created) with.
	Now time.Time
}

// ClaimDue claims up to limit due documents not leased by a live worker,
// under token for lease; every later write about them must present token.
// Due and leased are judged by the database's clock.
func (q queries) ClaimDue(ctx context.Context, token uuid.UUID, lease time.Duration, limit int32) (Claim, error) {
	rows, err := q.q.DocumentClaimDue(ctx, &token, lease.Seconds(), limit)
	if err != nil {
		return Claim{}, pg.Interpret(err, "claim due documents")
	}
	c := Claim{Documents: make([]Document, len(rows))}
	for i, r := range rows {
		c.Documents[i], c.Now = documentFromRow(r.InvoicerFiscalDocument), r.DbNow
	}
	return c, nil
}

// RenewLease gives document id, claimed with token, a full lease again; it
// reports false when the claim was lost.
func (q queries) RenewLease(ctx context.Context, id int64, token uuid.UUID, lease time.Duration) (bool, error) {
	n, err := q.q.DocumentRenewLease(ctx, lease.Seconds(), id, &token)
	if err != nil {
		return false, pg.Interpret(err, "renew lease of document %d", id)
	}
	return n > 0, nil
}

// Claimed names a document as a worker claimed it: its id and the status
// it had then.
type Claimed struct {
	ID     int64
	Status fiscal.Status
}

// MarkSending records that each of docs, claimed with token, may be in
// flight from now on, and gives it a full lease again. It returns the ids
// marked; one missing lost its claim or its status changed, and must not be
// sent.
func (q queries) MarkSending(ctx context.Context, token uuid.UUID, lease time.Duration, docs []Claimed) ([]int64, error) {
	p := dbsqlc.DocumentMarkSendingParams{LeaseSeconds: lease.Seconds(), LeaseToken: &token}
	for _, d := range docs {
		p.Ids, p.ClaimedStatuses = append(p.Ids, d.ID), append(p.ClaimedStatuses, string(d.Status))
	}
	ids, err := q.q.DocumentMarkSending(ctx, p)
	if err != nil {
		return nil, pg.Interpret(err, "mark %d documents sending", len(docs))
	}
	return ids, nil
}

// Result is what an emission attempt decided for a claimed document: its
// next status, when to look at it again and the provider's copy as known.
// Its times are reckoned from the database's clock when it is saved.
type Result struct {
	ID                   int64
	LeaseToken           uuid.UUID
	ClaimedStatus        fiscal.Status // the status it was claimed in
	Status               fiscal.Status
	ProviderSeries       *string
	ProviderNumber       *int64
	ProviderStatus       *string
	ProviderCAE          *string
	ProviderSecurityCode *string
	ProviderURL          *string
	ProviderCAEFrom      *int64
	ProviderCAETo        *int64
	ProviderCAEExpires   *time.Time
	IssueDate            *time.Time
	UnknownSince         *time.Time    // kept as given, unless UnknownSinceNow
	UnknownSinceNow      bool          // unknown since the database's now()
	DueIn                time.Duration // due this long after the database's now()
	DGIPolls             int32
	LastError            *string
	AttentionReason      *string
	Refused              bool // the provider refused the send: one more consecutive refusal (else none)
	// Unavailable: the provider did not judge the document (the send never
	// reached it, or nothing was sent); the refusals stay as they were.
	Unavailable bool
}

// resultRow is a Result as DocumentSaveResults reads it: keyed by column
// name, its dates as days and its time cut to the microsecond, as
// PostgreSQL keeps it.
type resultRow struct {
	ID                   int64      `json:"id"`
	LeaseToken           uuid.UUID  `json:"lease_token"`
	ClaimedStatus        string     `json:"claimed_status"`
	Status               string     `json:"status"`
	ProviderSeries       *string    `json:"provider_series"`
	ProviderNumber       *int64     `json:"provider_number"`
	ProviderStatus       *string    `json:"provider_status"`
	ProviderCAE          *string    `json:"provider_cae"`
	ProviderSecurityCode *string    `json:"provider_security_code"`
	ProviderURL          *string    `json:"provider_url"`
	ProviderCAEFrom      *int64     `json:"provider_cae_from"`
	ProviderCAETo        *int64     `json:"provider_cae_to"`
	ProviderCAEExpires   *string    `json:"provider_cae_expires"`
	IssueDate            *string    `json:"issue_date"`
	UnknownSince         *time.Time `json:"unknown_since"`
	UnknownSinceNow      bool       `json:"unknown_since_now"`
	DueInSeconds         float64    `json:"due_in_seconds"`
	DGIPolls             int32      `json:"dgi_polls"`
	LastError            *string    `json:"last_error"`
	AttentionReason      *string    `json:"attention_reason"`
	Refused              bool       `json:"refused"`
	Unavailable          bool       `json:"unavailable"`
}

func (r Result) row() resultRow {
	return resultRow{
		ID: r.ID, LeaseToken: r.LeaseToken, ClaimedStatus: string(r.ClaimedStatus), Status: string(r.Status),
		ProviderSeries: r.ProviderSeries, ProviderNumber: r.ProviderNumber, ProviderStatus: r.ProviderStatus,
		ProviderCAE: r.ProviderCAE, ProviderSecurityCode: r.ProviderSecurityCode, ProviderURL: r.ProviderURL,
		ProviderCAEFrom: r.ProviderCAEFrom, ProviderCAETo: r.ProviderCAETo, ProviderCAEExpires: dayOf(r.ProviderCAEExpires),
		IssueDate: dayOf(r.IssueDate), UnknownSince: micros(r.UnknownSince), UnknownSinceNow: r.UnknownSinceNow,
		DueInSeconds: r.DueIn.Seconds(), DGIPolls: r.DGIPolls,
		LastError: r.LastError, AttentionReason: r.AttentionReason, Refused: r.Refused, Unavailable: r.Unavailable,
	}
}

// micros is t cut to the microsecond, as PostgreSQL keeps it (JSON would
// carry its nanoseconds, which PostgreSQL rounds); nil stays nil.
func micros(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	m := t.Truncate(time.Microsecond)
	return &m
}

// dayOf is the calendar day of t, as given, for a date column; nil stays nil.
func dayOf(t *time.Time) *string {
	if t == nil {
		return nil
	}
	d := t.Format(time.DateOnly)
	return &d
}

// SaveResults saves results, of distinct documents, in one statement; each
// only while its lease token and claimed status still hold. fenced[i] is
// ErrFenced where the i-th result was refused for that; err is any other
// failure, after which the transaction must not commit (the caller saves
// each result alone to tell whose it was).
func (q queries) SaveResults(ctx context.Context, results []Result) (fenced []error, err error) {
	rows := make([]resultRow, len(results))
	ids := make([]int64, len(results))
	for i, r := range results {
		rows[i], ids[i] = r.row(), r.ID
	}
	body, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	saved, err := q.q.DocumentSaveResults(ctx, ids, body)
	if err != nil {
		return nil, pg.Interpret(err, "save results of %d documents", len(results))
	}
	fenced = make([]error, len(results))
	for i, r := range results {
		if !slices.Contains(saved, r.ID) {
			fenced[i] = ErrFenced
		}
	}
	return fenced, nil
}

// Attempt is one provider call made for a document.
type Attempt struct {
	ID         int64 // set by the database; ignored by InsertAttempts
	DocumentID int64
	Operation  string // lookup, status or emit
	Outcome    string
	Error      *string // stored clipped and with personal data masked (CleanError)
	LatencyMS  int32
	At         time.Time // set by the database; ignored by InsertAttempts
}

// InsertAttempts records attempts with one COPY, each error text cleaned
// by CleanError.
func (q queries) InsertAttempts(ctx context.Context, attempts []Attempt) error {
	rows := make([]dbsqlc.AttemptInsertParams, len(attempts))
	for i, a := range attempts {
		rows[i] = dbsqlc.AttemptInsertParams{DocumentID: a.DocumentID, Operation: a.Operation, Outcome: a.Outcome,
			Error: cleanErrorPtr(a.Error), LatencyMs: a.LatencyMS}
	}
	if _, err := q.q.AttemptInsert(ctx, rows); err != nil {
		return pg.Interpret(err, "record %d emission attempts", len(attempts))
	}
	return nil
}

// Attempts returns the provider calls recorded for document id, oldest
// first.
func (q queries) Attempts(ctx context.Context, id int64) ([]Attempt, error) {
	rows, err := q.q.AttemptListByDocument(ctx, id)
	if err != nil {
		return nil, pg.Interpret(err, "attempts of document %d", id)
	}
	return attemptsFromRows(rows), nil
}

// AttemptPage returns up to limit provider calls of document id, newest
// first, those with an id below before (0: from the newest).
func (q queries) AttemptPage(ctx context.Context, id, before int64, limit int32) ([]Attempt, error) {
	rows, err := q.q.AttemptPageByDocument(ctx, id, before, limit)
	if err != nil {
		return nil, pg.Interpret(err, "attempts of document %d", id)
	}
	return attemptsFromRows(rows), nil
}

// PruneBound returns the id of the first attempt with an id above after
// made at or after olderThan (the largest int64 when none): the end of a
// retention pass that starts above after.
func (s *Store) PruneBound(ctx context.Context, olderThan time.Time, after int64) (int64, error) {
	var bound int64
	err := s.walkKeys(ctx, func(q *dbsqlc.Queries) (err error) {
		bound, err = q.AttemptsPruneBound(ctx, after, olderThan)
		return err
	})
	if err != nil {
		return 0, pg.Interpret(err, "find the end of the attempts' retention pass")
	}
	return bound, nil
}

// PruneAttempts looks at up to batch attempts with an id between after and
// below made before olderThan, deletes those of documents in a final status
// but each document's last attempt, and returns the highest id it looked at
// (0: none left) and how many it deleted.
func (s *Store) PruneAttempts(ctx context.Context, olderThan time.Time, after, below int64, batch int32) (last, deleted int64, err error) {
	err = s.walkKeys(ctx, func(q *dbsqlc.Queries) error {
		r, err := q.AttemptsPrune(ctx, dbsqlc.AttemptsPruneParams{AfterID: after, BelowID: below, OlderThan: olderThan, BatchSize: batch})
		last, deleted = r.LastID, r.Deleted
		return err
	})
	if err != nil {
		return 0, 0, pg.Interpret(err, "prune emission attempts")
	}
	return last, deleted, nil
}

// walkKeys runs fn in a transaction under pg.WalkKeys: the retention's
// statements walk the primary key, and attempts are deleted and their space
// reused, so the table's pages hold them in no order of their ids and
// PostgreSQL would rather read the whole table at every batch.
func (s *Store) walkKeys(ctx context.Context, fn func(*dbsqlc.Queries) error) error {
	return pg.InKeyWalk(ctx, s.pool, func(tx pgx.Tx) error { return fn(s.q.WithTx(tx)) })
}

func attemptsFromRows(rows []dbsqlc.InvoicerEmissionAttempt) []Attempt {
	out := make([]Attempt, len(rows))
	for i, r := range rows {
		out[i] = Attempt{ID: r.ID, DocumentID: r.DocumentID, Operation: r.Operation, Outcome: r.Outcome, Error: r.Error,
			LatencyMS: r.LatencyMs, At: r.CreatedAt}
	}
	return out
}
