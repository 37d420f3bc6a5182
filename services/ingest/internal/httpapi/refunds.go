package httpapi

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// RefundWatch tells ingest about a refund the merchant created at the PSP,
// so the status poller finds it if its notification never comes.
type RefundWatch struct {
	PSPRefundID  string `json:"psp_refund_id"`
	PSPPaymentID string `json:"psp_payment_id"`
}

func (a *API) watchRefund(c echo.Context) error {
	var in RefundWatch
	if err := bind(c, &in); err != nil {
		return err
	}
	errs := fieldErrors{}
	for field, v := range map[string]string{"psp_refund_id": in.PSPRefundID, "psp_payment_id": in.PSPPaymentID} {
		if strings.TrimSpace(v) == "" || len(v) > 100 {
			errs[field] = "want 1 to 100 characters"
		}
	}
	if len(errs) > 0 {
		return errs.answer(c)
	}
	added, err := a.store.WatchRefund(c.Request().Context(), in.PSPRefundID, in.PSPPaymentID)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if !added {
		status = http.StatusOK // registered before: nothing changes
	}
	return c.JSON(status, in)
}
