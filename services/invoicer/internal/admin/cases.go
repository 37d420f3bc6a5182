package admin

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// caseActions are the actions that close each kind of case the invoicer
// owns (docs/cases.md). A parked outbox row is unparked through the relay.
var caseActions = map[string][]string{
	store.CaseDocumentRejected: {"reissue"},
	store.CaseDocumentRefused:  {"retry", "reissue", "void"},
	store.CaseNeedsAttention:   {"adopt", "retry", "void"},
	store.CaseParkedOutboxRow:  {},
}

// Case is a case as the API shows it (docs/cases.md).
type Case struct {
	ID           string         `json:"id"`
	Service      string         `json:"service"`
	Kind         string         `json:"kind"`
	Subject      string         `json:"subject"`
	PSP          string         `json:"psp,omitempty"`
	PSPPaymentID string         `json:"psp_payment_id,omitempty"`
	PSPRefundID  string         `json:"psp_refund_id,omitempty"`
	OrderID      string         `json:"order_id,omitempty"`
	AmountMinor  *int64         `json:"amount_minor,omitempty"`
	Currency     string         `json:"currency,omitempty"`
	DocumentID   *int64         `json:"document_id,omitempty"`
	Evidence     map[string]any `json:"evidence"`
	OpenedAt     time.Time      `json:"opened_at"`
	UpdatedAt    time.Time      `json:"updated_at"`
	ClosedAt     *time.Time     `json:"closed_at,omitempty"`
	ClosedBy     *string        `json:"closed_by,omitempty"`
	Action       *string        `json:"action,omitempty"`
	Reason       *string        `json:"reason,omitempty"`
	Actions      []string       `json:"actions"`
}

func caseView(c store.Case) Case {
	v := Case{ID: "invoicer-" + strconv.FormatInt(c.ID, 10), Service: "invoicer", Kind: c.Kind, Subject: c.Subject,
		PSP: c.PSP, PSPPaymentID: c.PSPPaymentID, PSPRefundID: c.PSPRefundID, OrderID: c.OrderID,
		AmountMinor: c.AmountMinor, Currency: c.Currency, DocumentID: c.DocumentID, Evidence: c.Evidence,
		OpenedAt: c.OpenedAt, UpdatedAt: c.UpdatedAt, ClosedAt: c.ClosedAt, ClosedBy: c.ClosedBy,
		Action: c.Action, Reason: c.Reason, Actions: []string{}}
	if v.Evidence == nil {
		v.Evidence = map[string]any{}
	}
	if c.ClosedAt == nil {
		v.Actions = append(v.Actions, caseActions[c.Kind]...)
	}
	return v
}

// listCases serves GET /admin/cases?status=open|closed|all&kind=&limit=.
func (a *API) listCases(c echo.Context) error {
	status := c.QueryParam("status")
	if status == "" {
		status = "open"
	}
	if status != "open" && status != "closed" && status != "all" {
		return errkind.Coded(errkind.Invalid, "invalid_status", "status: want open, closed or all")
	}
	limit, err := intParam(c, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	cases, err := a.store.Cases(c.Request().Context(), status, c.QueryParam("kind"), int32(limit))
	if err != nil {
		return err
	}
	out := make([]Case, len(cases))
	for i, x := range cases {
		out[i] = caseView(x)
	}
	return c.JSON(http.StatusOK, map[string]any{"cases": out})
}

// showCase serves GET /admin/cases/:id.
func (a *API) showCase(c echo.Context) error {
	x, err := a.caseOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, caseView(x))
}

// caseOf loads the case named by the :id path parameter, given as 17 or
// invoicer-17.
func (a *API) caseOf(c echo.Context) (store.Case, error) {
	raw := strings.TrimPrefix(c.Param("id"), "invoicer-")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return store.Case{}, errkind.Coded(errkind.Invalid, "invalid_id", "id: want invoicer-<n> or a positive integer")
	}
	x, err := a.store.Case(c.Request().Context(), id)
	if errkind.Is(err, errkind.NotFound) {
		return x, errkind.Coded(errkind.NotFound, "not_found", "no case %s", c.Param("id"))
	}
	return x, err
}

// CaseResolution is the body of POST /admin/cases/:id/resolve.
type CaseResolution struct {
	Action      string `json:"action"`
	Actor       string `json:"actor"`
	Reason      string `json:"reason"`
	PSPRefundID string `json:"psp_refund_id,omitempty"` // not used by the invoicer's kinds
	Series      string `json:"series,omitempty"`        // adopt (needs_attention)
	Number      int64  `json:"number,omitempty"`        // adopt (needs_attention)
}

// check validates r against case x: 400 for a missing actor or reason, 409
// for a closed case, 422 for an action that does not fit its kind.
func (r *CaseResolution) check(x store.Case) error {
	r.Actor, r.Reason = strings.TrimSpace(r.Actor), strings.TrimSpace(r.Reason)
	switch {
	case r.Actor == "" || r.Reason == "":
		return errkind.Coded(errkind.Invalid, "missing_actor_or_reason", "actor and reason are required")
	case x.ClosedAt != nil:
		return store.ErrCaseClosed
	case !slices.Contains(caseActions[x.Kind], r.Action):
		return errkind.Coded(errkind.Refused, "action_not_allowed", "action %q does not fit a %s case: want one of %s",
			r.Action, x.Kind, strings.Join(caseActions[x.Kind], ", "))
	case x.DocumentID == nil:
		return errkind.Coded(errkind.Refused, "no_document", "case %d holds no document", x.ID)
	}
	return nil
}

// resolveCase serves POST /admin/cases/:id/resolve.
func (a *API) resolveCase(c echo.Context) error {
	var r CaseResolution
	if err := decode(c, &r); err != nil {
		return err
	}
	x, err := a.caseOf(c)
	if err != nil {
		return err
	}
	if err := r.check(x); err != nil {
		return err
	}
	if x.Kind == store.CaseNeedsAttention {
		err = a.resolveAttention(c, x, r)
	} else {
		err = a.resolveDocumentCase(c, x, r)
	}
	if err != nil {
		return err
	}
	closed, err := a.store.Case(c.Request().Context(), x.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, caseView(closed))
}
