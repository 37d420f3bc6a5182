package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

func caseJSON(c store.Case) cases.View {
	return cases.View{ID: cases.ID("ingest", c.ID), Service: "ingest", Kind: c.Kind, Subject: c.Subject,
		PSP: c.PSP, PSPPaymentID: c.PSPPaymentID, PSPRefundID: c.PSPRefundID, OrderID: c.OrderID,
		AmountMinor: c.AmountMinor, Currency: c.Currency, ReceiptID: c.ReceiptID, Evidence: cases.Evidence(c.Evidence),
		OpenedAt: cases.Stamp(&c.OpenedAt), UpdatedAt: cases.Stamp(&c.UpdatedAt), ClosedAt: cases.Stamp(c.ClosedAt),
		ClosedBy: c.ClosedBy, Action: c.Action, Reason: c.Reason, Actions: actions(c)}
}

func (a *API) listCases(c echo.Context) error {
	status := c.QueryParam("status")
	switch status {
	case "":
		status = "open"
	case "open", "closed", "all":
	default:
		return errkind.Coded(errkind.Invalid, "invalid_status", "status: want open, closed or all")
	}
	limit, err := queryInt(c, "limit", 100)
	if err != nil || limit < 1 || limit > 1000 {
		return errkind.Coded(errkind.Invalid, "invalid_limit", "limit: want 1 to 1000")
	}
	found, err := a.store.Cases(c.Request().Context(), status, c.QueryParam("kind"), int(limit))
	if err != nil {
		return err
	}
	out := make([]cases.View, len(found))
	for i, k := range found {
		out[i] = caseJSON(k)
	}
	return c.JSON(http.StatusOK, map[string]any{"cases": out})
}

func (a *API) getCase(c echo.Context) error {
	id, err := caseID(c)
	if err != nil {
		return err
	}
	k, err := a.store.Case(c.Request().Context(), id)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.NotFound, "case_not_found", "no case with this id")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, caseJSON(k))
}

// caseID reads the :id parameter, ingest-17 or 17.
func caseID(c echo.Context) (int64, error) {
	id, ok := cases.ParseOwnID("ingest", c.Param("id"))
	if !ok {
		return 0, errkind.Coded(errkind.Invalid, "invalid_id", "id: want a case id such as ingest-17")
	}
	return id, nil
}
