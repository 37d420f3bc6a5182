package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/reconciler/internal/store/dbsqlc"
)

// Case is a situation a person must decide (docs/cases.md), as kept in one
// service's schema: Service says which (ingest, invoicer, reconciler).
type Case struct {
	ID                             int64
	Service                        string
	Kind, Subject                  string
	PSP, PSPPaymentID, PSPRefundID string
	OrderID                        string
	AmountMinor                    *int64
	Currency                       string
	Evidence                       json.RawMessage
	OpenedAt, UpdatedAt            time.Time
	ClosedAt                       *time.Time
	ClosedBy, Action, Reason       string // "" while open
}

// NewCase is what a detector knows when it opens a case.
type NewCase struct {
	Kind, Subject                  string
	PSP, PSPPaymentID, PSPRefundID string
	OrderID                        string
	AmountMinor                    *int64
	Currency                       string
	Evidence                       any // marshalled to JSON; nil is {}
}

// CaseFilter selects cases: Status is open, closed or all; Kind "" is
// every kind; Limit caps the answer.
type CaseFilter struct {
	Status, Kind string
	Limit        int
}

// CaseStat is how many cases of Kind are open and when the oldest opened.
type CaseStat struct {
	Kind   string
	Open   int64
	Oldest time.Time
}

func caseFrom(service string, r dbsqlc.ReconcilerCase) Case {
	ev := json.RawMessage(r.Evidence)
	if len(ev) == 0 {
		ev = json.RawMessage("{}")
	}
	return Case{ID: r.ID, Service: service, Kind: r.Kind, Subject: r.Subject, PSP: r.Psp,
		PSPPaymentID: r.PspPaymentID, PSPRefundID: r.PspRefundID, OrderID: r.OrderID,
		AmountMinor: r.AmountMinor, Currency: r.Currency, Evidence: ev,
		OpenedAt: r.OpenedAt, UpdatedAt: r.UpdatedAt, ClosedAt: r.ClosedAt,
		ClosedBy: str(r.ClosedBy), Action: str(r.Action), Reason: str(r.Reason)}
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func evidence(v any) ([]byte, error) {
	if v == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(v)
}

// OpenCase opens c in the reconciler's schema, or refreshes the open case
// of its kind and subject (evidence, updated_at), and returns it. Its
// errors are the database's.
func (s *Store) OpenCase(ctx context.Context, c NewCase) (Case, error) {
	ev, err := evidence(c.Evidence)
	if err != nil {
		return Case{}, err
	}
	row, err := s.q.CaseOpenOrTouch(ctx, dbsqlc.CaseOpenOrTouchParams{Kind: c.Kind, Subject: c.Subject,
		Psp: c.PSP, PspPaymentID: c.PSPPaymentID, PspRefundID: c.PSPRefundID, OrderID: c.OrderID,
		AmountMinor: c.AmountMinor, Currency: c.Currency, Evidence: ev})
	if err != nil {
		return Case{}, pg.Interpret(err, "open case %s %s", c.Kind, c.Subject)
	}
	return caseFrom("reconciler", row), nil
}

// OpenCaseUnlessClosed opens or refreshes c like OpenCase, unless a case of
// its kind and subject was closed already (an operator decided it). Its
// errors are the database's.
func (s *Store) OpenCaseUnlessClosed(ctx context.Context, c NewCase) error {
	ev, err := evidence(c.Evidence)
	if err != nil {
		return err
	}
	err = s.q.CaseOpenUnlessClosed(ctx, dbsqlc.CaseOpenUnlessClosedParams{Kind: c.Kind, Subject: c.Subject,
		Psp: c.PSP, PspPaymentID: c.PSPPaymentID, PspRefundID: c.PSPRefundID, OrderID: c.OrderID,
		AmountMinor: c.AmountMinor, Currency: c.Currency, Evidence: ev})
	return pg.Interpret(err, "open case %s %s", c.Kind, c.Subject)
}

// Cases lists the reconciler's cases that f selects, oldest first. Its
// errors are the database's.
func (s *Store) Cases(ctx context.Context, f CaseFilter) ([]Case, error) {
	rows, err := s.q.CasesList(ctx, f.Status, f.Kind, int32(f.Limit))
	if err != nil {
		return nil, pg.Interpret(err, "list cases")
	}
	out := make([]Case, len(rows))
	for i, r := range rows {
		out[i] = caseFrom("reconciler", r)
	}
	return out, nil
}

// OpenCasesOfKind returns at most limit open cases of kind, oldest first.
// Its errors are the database's.
func (s *Store) OpenCasesOfKind(ctx context.Context, kind string, limit int) ([]Case, error) {
	return s.Cases(ctx, CaseFilter{Status: "open", Kind: kind, Limit: limit})
}

// Case returns the reconciler's case id; errkind.NotFound when there is none.
func (s *Store) Case(ctx context.Context, id int64) (Case, error) {
	row, err := s.q.CaseGet(ctx, id)
	if err != nil {
		return Case{}, pg.Interpret(err, "case reconciler-%d", id)
	}
	return caseFrom("reconciler", row), nil
}

// CloseCase closes the open case id with who closed it, the action and
// why, and returns it; errkind.NotFound when no open case has that id (it
// does not exist or is closed already: Case tells which).
func (s *Store) CloseCase(ctx context.Context, id int64, by, action, reason string) (Case, error) {
	row, err := s.q.CaseClose(ctx, dbsqlc.CaseCloseParams{ID: id, ClosedBy: &by, Action: &action, Reason: &reason})
	if err != nil {
		return Case{}, pg.Interpret(err, "close case reconciler-%d", id)
	}
	return caseFrom("reconciler", row), nil
}

// OpenCaseStats counts the reconciler's open cases per kind. Its errors
// are the database's.
func (s *Store) OpenCaseStats(ctx context.Context) ([]CaseStat, error) {
	rows, err := s.q.CasesOpenStats(ctx)
	if err != nil {
		return nil, pg.Interpret(err, "count open cases")
	}
	out := make([]CaseStat, len(rows))
	for i, r := range rows {
		out[i] = CaseStat{Kind: r.Kind, Open: r.Open, Oldest: r.Oldest}
	}
	return out, nil
}
