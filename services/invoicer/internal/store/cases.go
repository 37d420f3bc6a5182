package store

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/invoicer/internal/store/dbsqlc"
)

// ErrCaseClosed, of kind errkind.Conflict: the case was closed already.
var ErrCaseClosed = errkind.Coded(errkind.Conflict, "case_closed", "the case is closed already")

// Case is a situation a person must decide: the money it concerns, the
// evidence, and, once closed, who closed it, how and why.
type Case struct {
	ID           int64
	Kind         string
	Subject      string // document:<id>, outbox:<id>
	PSP          string
	PSPPaymentID string
	PSPRefundID  string
	OrderID      string
	AmountMinor  *int64
	Currency     string
	DocumentID   *int64
	Evidence     map[string]any // never personal data
	OpenedAt     time.Time
	UpdatedAt    time.Time
	ClosedAt     *time.Time
	ClosedBy     *string
	Action       *string
	Reason       *string
}

func caseFromRow(r dbsqlc.InvoicerCase) Case {
	c := Case{ID: r.ID, Kind: r.Kind, Subject: r.Subject, PSP: r.Psp, PSPPaymentID: r.PspPaymentID,
		PSPRefundID: r.PspRefundID, OrderID: r.OrderID, AmountMinor: r.AmountMinor, Currency: r.Currency,
		DocumentID: r.DocumentID, OpenedAt: r.OpenedAt, UpdatedAt: r.UpdatedAt, ClosedAt: r.ClosedAt,
		ClosedBy: r.ClosedBy, Action: r.Action, Reason: r.Reason}
	// evidence is jsonb written by OpenCase or the outbox trigger: always
	// an object.
	_ = json.Unmarshal(r.Evidence, &c.Evidence)
	return c
}

// DocumentCase returns the case of kind about d: its subject, the money and
// the source ids from the document, with evidence.
func DocumentCase(kind string, d Document, evidence map[string]any) Case {
	c := Case{Kind: kind, Subject: DocumentSubject(d.ID), AmountMinor: &d.AmountMinor, Currency: d.Currency,
		DocumentID: &d.ID, Evidence: evidence}
	if d.SourceKind == "payment" {
		c.PSPPaymentID = d.SourceRef
	} else {
		c.PSPRefundID = d.SourceRef
	}
	if d.OriginalSourceRef != nil {
		c.PSPPaymentID = *d.OriginalSourceRef
	}
	return c
}

// RejectedCase is the document_rejected case of d, which DGI or the
// provider rejected with providerStatus, the provider's status code.
func RejectedCase(d Document, providerStatus string) Case {
	return DocumentCase(cases.DocumentRejected, d, map[string]any{
		"provider_status": providerStatus, "reference": d.Reference, "cfe_type": int32(d.CFEType), "kind": string(d.Kind),
		"source_kind": d.SourceKind, "revision": d.Revision})
}

// DocumentSubject is the subject of a case about document id.
func DocumentSubject(id int64) string { return "document:" + strconv.FormatInt(id, 10) }

// OpenCase opens c or, when a case of its kind and subject is open
// already, notes that it was seen again with c's evidence; it returns the
// case as stored.
func (q queries) OpenCase(ctx context.Context, c Case) (Case, error) {
	ev, err := json.Marshal(c.Evidence)
	if err != nil {
		return Case{}, err
	}
	r, err := q.q.CaseOpen(ctx, dbsqlc.CaseOpenParams{Kind: c.Kind, Subject: c.Subject, Psp: c.PSP,
		PspPaymentID: c.PSPPaymentID, PspRefundID: c.PSPRefundID, OrderID: c.OrderID, AmountMinor: c.AmountMinor,
		Currency: c.Currency, DocumentID: c.DocumentID, Evidence: ev})
	if err != nil {
		return Case{}, pg.Interpret(err, "open %s case on %s", c.Kind, c.Subject)
	}
	return caseFromRow(r), nil
}

// Case returns case id, or an error of kind NotFound.
func (q queries) Case(ctx context.Context, id int64) (Case, error) {
	r, err := q.q.CaseGet(ctx, id)
	if err != nil {
		return Case{}, pg.Interpret(err, "case %d", id)
	}
	return caseFromRow(r), nil
}

// OpenCaseOf returns the open case of kind about subject, or an error of
// kind NotFound when none is open.
func (q queries) OpenCaseOf(ctx context.Context, kind, subject string) (Case, error) {
	r, err := q.q.CaseGetOpen(ctx, kind, subject)
	if err != nil {
		return Case{}, pg.Interpret(err, "open %s case on %s", kind, subject)
	}
	return caseFromRow(r), nil
}

// Cases returns up to limit cases, newest first; status is open, closed or
// all, kind empty for any.
func (q queries) Cases(ctx context.Context, status, kind string, limit int32) ([]Case, error) {
	var k *string
	if kind != "" {
		k = &kind
	}
	rows, err := q.q.CaseList(ctx, status, k, limit)
	if err != nil {
		return nil, pg.Interpret(err, "list cases")
	}
	out := make([]Case, len(rows))
	for i, r := range rows {
		out[i] = caseFromRow(r)
	}
	return out, nil
}

// Closing is an operator's closing record of a case.
type Closing struct {
	ID     int64
	Actor  string
	Action string
	Reason string
}

// CloseCase closes case c.ID with its record; ErrCaseClosed when it was
// closed already.
func (q queries) CloseCase(ctx context.Context, c Closing) (Case, error) {
	r, err := q.q.CaseClose(ctx, dbsqlc.CaseCloseParams{ID: c.ID, ClosedBy: &c.Actor, Action: &c.Action, Reason: &c.Reason})
	if errors.Is(err, pgx.ErrNoRows) {
		return Case{}, ErrCaseClosed
	}
	if err != nil {
		return Case{}, pg.Interpret(err, "close case %d", c.ID)
	}
	return caseFromRow(r), nil
}

// CloseCaseOf closes the open case of kind about subject, if any, with c's
// actor, action and reason (c.ID is ignored).
func (q queries) CloseCaseOf(ctx context.Context, kind, subject string, c Closing) error {
	open, err := q.OpenCaseOf(ctx, kind, subject)
	if errkind.Is(err, errkind.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	c.ID = open.ID
	_, err = q.CloseCase(ctx, c)
	return err
}

// OpenCaseStats returns the open cases per kind, ages by the database's
// clock.
func (q queries) OpenCaseStats(ctx context.Context) ([]cases.Stat, error) {
	rows, err := q.q.CaseOpenStats(ctx)
	if err != nil {
		return nil, pg.Interpret(err, "open case stats")
	}
	out := make([]cases.Stat, len(rows))
	for i, r := range rows {
		out[i] = cases.Stat{Kind: r.Kind, Open: r.Open, OldestAge: time.Duration(r.OldestAgeSeconds * float64(time.Second))}
	}
	return out, nil
}
