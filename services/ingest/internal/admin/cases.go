package admin

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// Case is a case as the API shows it (docs/cases.md): its id is
// ingest-<n>.
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
	ReceiptID    *int64         `json:"receipt_id,omitempty"`
	Evidence     map[string]any `json:"evidence"`
	OpenedAt     time.Time      `json:"opened_at"`
	UpdatedAt    time.Time      `json:"updated_at"`
	ClosedAt     *time.Time     `json:"closed_at,omitempty"`
	ClosedBy     string         `json:"closed_by,omitempty"`
	Action       string         `json:"action,omitempty"`
	Reason       string         `json:"reason,omitempty"`
	Actions      []string       `json:"actions"`
}

func caseJSON(c store.Case) Case {
	ev := c.Evidence
	if ev == nil {
		ev = map[string]any{}
	}
	return Case{ID: "ingest-" + strconv.FormatInt(c.ID, 10), Service: "ingest", Kind: c.Kind, Subject: c.Subject,
		PSP: c.PSP, PSPPaymentID: c.PSPPaymentID, PSPRefundID: c.PSPRefundID, OrderID: c.OrderID,
		AmountMinor: c.AmountMinor, Currency: c.Currency, ReceiptID: c.ReceiptID, Evidence: ev,
		OpenedAt: c.OpenedAt, UpdatedAt: c.UpdatedAt, ClosedAt: c.ClosedAt, ClosedBy: c.ClosedBy,
		Action: c.Action, Reason: c.Reason, Actions: actions(c)}
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
	cases, err := a.store.Cases(c.Request().Context(), status, c.QueryParam("kind"), int(limit))
	if err != nil {
		return err
	}
	out := make([]Case, len(cases))
	for i, k := range cases {
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
	id, err := strconv.ParseInt(strings.TrimPrefix(c.Param("id"), "ingest-"), 10, 64)
	if err != nil || id < 1 {
		return 0, errkind.Coded(errkind.Invalid, "invalid_id", "id: want a case id such as ingest-17")
	}
	return id, nil
}
