package admin

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/reveals"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// caseActions are the actions that close a kind of case the invoicer owns
// (docs/cases.md); none for parked_outbox_row, unparked through the relay.
func caseActions(kind string) []string {
	if kind == cases.ParkedOutboxRow {
		return []string{}
	}
	return cases.Actions(kind)
}

func caseView(c store.Case) cases.View {
	v := cases.View{ID: cases.ID("invoicer", c.ID), Service: "invoicer", Kind: c.Kind, Subject: c.Subject,
		PSP: c.PSP, PSPPaymentID: c.PSPPaymentID, PSPRefundID: c.PSPRefundID, OrderID: c.OrderID,
		AmountMinor: c.AmountMinor, Currency: c.Currency, DocumentID: c.DocumentID, Evidence: cases.Evidence(c.Evidence),
		OpenedAt: cases.Stamp(&c.OpenedAt), UpdatedAt: cases.Stamp(&c.UpdatedAt), ClosedAt: cases.Stamp(c.ClosedAt),
		ClosedBy: cases.Deref(c.ClosedBy), Action: cases.Deref(c.Action), Reason: cases.Deref(c.Reason), Actions: []string{}}
	if c.ClosedAt == nil {
		v.Actions = caseActions(c.Kind)
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
	found, err := a.store.Cases(c.Request().Context(), status, c.QueryParam("kind"), int32(limit))
	if err != nil {
		return err
	}
	out := make([]cases.View, len(found))
	for i, x := range found {
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

// revealCase serves POST /admin/cases/:id/reveal: the case with its
// evidence unmasked, answered only after the reveal (who, why) is
// recorded in invoicer.reveals.
func (a *API) revealCase(c echo.Context) error {
	req, err := reveals.Bind(c)
	if err != nil {
		return err
	}
	x, err := a.caseOf(c)
	if err != nil {
		return err
	}
	rec, err := a.store.RecordReveal(c.Request().Context(), reveals.Case(cases.ID("invoicer", x.ID)), req)
	if err != nil {
		return err
	}
	a.log.Info("case evidence revealed", zap.Int64("case", x.ID), zap.Int64("reveal", rec.ID))
	return c.JSON(http.StatusOK, caseView(x))
}

// caseOf loads the case named by the :id path parameter, given as 17 or
// invoicer-17.
func (a *API) caseOf(c echo.Context) (store.Case, error) {
	id, ok := cases.ParseOwnID("invoicer", c.Param("id"))
	if !ok {
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
	case !slices.Contains(caseActions(x.Kind), r.Action):
		return errkind.Coded(errkind.Refused, "action_not_allowed", "action %q does not fit a %s case: want one of %s",
			r.Action, x.Kind, strings.Join(caseActions(x.Kind), ", "))
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
	if x.Kind == cases.NeedsAttention {
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
