package admin

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/apply"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// actions lists what closes c: none once it is closed, and for an
// unmatched payment those that fit its reason.
func actions(c store.Case) []string {
	if !c.Open() {
		return []string{}
	}
	switch c.Kind {
	case cases.UnmatchedPayment:
		switch c.Evidence["reason"] {
		case apply.ReasonSecondPayment:
			return []string{cases.ActionSeparateSale, cases.ActionRefundedAtPSP}
		case apply.ReasonUnknownOrder:
			return []string{cases.ActionReapply, cases.ActionRefundedAtPSP}
		}
		return []string{cases.ActionReapply, cases.ActionAcceptAsSale, cases.ActionRefundedAtPSP}
	case cases.RefusedRefund:
		return []string{cases.ActionReapply, cases.ActionRefundedAtPSP, cases.ActionAcknowledge}
	case cases.ParkedReceipt:
		return []string{cases.ActionReplay, cases.ActionAcknowledge}
	case cases.Chargeback:
		return []string{cases.ActionAcknowledge}
	}
	return []string{} // parked_outbox_row: unpark at the relay
}

// Resolution is an operator's request to close a case.
type Resolution struct {
	Action      string `json:"action"`
	Actor       string `json:"actor"`
	Reason      string `json:"reason"`
	PSPRefundID string `json:"psp_refund_id"`
}

func (r Resolution) check() error {
	for _, f := range []struct{ name, value string }{{"action", r.Action}, {"actor", r.Actor}, {"reason", r.Reason}} {
		if strings.TrimSpace(f.value) == "" {
			return errkind.Coded(errkind.Invalid, "missing_field", "%s: required", f.name)
		}
	}
	if r.Action == cases.ActionRefundedAtPSP && strings.TrimSpace(r.PSPRefundID) == "" {
		return errkind.Coded(errkind.Invalid, "missing_field", "psp_refund_id: required for refunded_at_psp")
	}
	return nil
}

func (a *API) resolveCase(c echo.Context) error {
	id, err := caseID(c)
	if err != nil {
		return err
	}
	var req Resolution
	if err := c.Bind(&req); err != nil {
		return errkind.Coded(errkind.Invalid, "invalid_body", "body: want a JSON object with action, actor and reason")
	}
	if err := req.check(); err != nil {
		return err
	}
	closed, err := a.resolve(c.Request().Context(), id, req)
	if err != nil {
		return err
	}
	a.log.Info("operator closed case", zap.String("case", caseJSON(closed).ID), zap.String("kind", closed.Kind),
		zap.String("action", closed.Action)) // never the actor: a person's name
	if req.Action == cases.ActionReapply || req.Action == cases.ActionReplay {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	return c.JSON(http.StatusOK, caseJSON(closed))
}

// resolve runs req's action on case id and closes it, in one transaction.
func (a *API) resolve(ctx context.Context, id int64, req Resolution) (store.Case, error) {
	var closed store.Case
	err := a.store.InTx(ctx, func(tx *store.Tx) error {
		k, err := tx.LockCase(ctx, id)
		if errkind.Is(err, errkind.NotFound) {
			return errkind.Coded(errkind.NotFound, "case_not_found", "no case with this id")
		}
		if err != nil {
			return err
		}
		if !k.Open() {
			return errkind.Coded(errkind.Conflict, "case_closed", "the case is closed already, by %s with %s", k.ClosedBy, k.Action)
		}
		if allowed := actions(k); !slices.Contains(allowed, req.Action) {
			return errkind.Coded(errkind.Refused, "action_not_allowed",
				"action: %s does not fit this %s case; want one of [%s]", req.Action, k.Kind, strings.Join(allowed, ", "))
		}
		if err := a.act(ctx, tx, k, req.Action); err != nil {
			return err
		}
		closed, err = tx.CloseCase(ctx, id, store.CaseClosing{Actor: req.Actor, Action: req.Action, Reason: req.Reason, PSPRefundID: req.PSPRefundID})
		return err
	})
	return closed, err
}

// act does what action writes besides the closing record.
func (a *API) act(ctx context.Context, tx *store.Tx, k store.Case, action string) error {
	switch action {
	case cases.ActionReapply, cases.ActionReplay:
		if k.ReceiptID == nil {
			return errkind.Coded(errkind.Refused, "no_receipt", "the case holds no receipt to apply again")
		}
		return tx.RequeueReceipt(ctx, *k.ReceiptID)
	case cases.ActionAcceptAsSale, cases.ActionSeparateSale:
		return a.recordSale(ctx, tx, k)
	}
	return nil // refunded_at_psp, acknowledge: the closing record is all
}

// recordSale invoices k's payment as a sale of its own, for the PSP's
// amount, as its order's buyer.
func (a *API) recordSale(ctx context.Context, tx *store.Tx, k store.Case) error {
	if k.AmountMinor == nil || k.PSPPaymentID == "" {
		return errkind.Coded(errkind.Refused, "no_payment", "the case holds no payment to invoice")
	}
	o, cust, err := tx.OrderWithCustomerByMerchantID(ctx, k.OrderID)
	if errkind.Is(err, errkind.NotFound) {
		return errkind.Coded(errkind.Refused, "unknown_order", "order %s is not recorded: record it, then reapply", k.OrderID)
	}
	if err != nil {
		return err
	}
	return apply.RecordSale(ctx, tx, apply.Sale{PaymentID: k.PSPPaymentID, AmountMinor: *k.AmountMinor,
		Currency: k.Currency, Order: o, Customer: cust})
}
