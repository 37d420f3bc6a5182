package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
)

// OrderAmendment is a PATCH of an order: the fields given replace the
// order's; the others stay.
type OrderAmendment struct {
	AmountMinor  *int64      `json:"amount_minor"`
	Currency     *string     `json:"currency"`
	Lines        *orderLines `json:"lines"`
	PSPPaymentID *string     `json:"psp_payment_id"`
}

// requireKey refuses a request without an Idempotency-Key.
func requireKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if strings.TrimSpace(c.Request().Header.Get("Idempotency-Key")) == "" {
			return errkind.Coded(errkind.Invalid, "missing_idempotency_key", "Idempotency-Key: required")
		}
		return next(c)
	}
}

// amendOrder changes an order's amount, currency, lines or PSP payment, as
// an operator does before reapplying an unmatched payment. An order that
// already has a PAID payment keeps what that payment says: a change that
// contradicts it is refused with 409.
func (a *API) amendOrder(c echo.Context) error {
	id, err := parseID(c)
	if err != nil {
		return err
	}
	var in OrderAmendment
	if err := bind(c, &in); err != nil {
		return err
	}
	var out store.Order
	err = a.store.InTx(c.Request().Context(), func(tx *store.Tx) error {
		out, err = a.amend(c.Request().Context(), tx, id, in)
		return err
	})
	var fe fieldErrors
	switch {
	case asFieldErrors(err, &fe):
		return fe.answer(c)
	case err != nil:
		return conflict(notFound(err), "another order holds this psp_payment_id")
	}
	return c.JSON(http.StatusOK, orderOut(out))
}

// amend applies in to order id in tx, validated like a new order.
func (a *API) amend(ctx context.Context, tx *store.Tx, id uuid.UUID, in OrderAmendment) (store.Order, error) {
	o, err := tx.LockOrder(ctx, id)
	if err != nil {
		return store.Order{}, err
	}
	merged := orderOut(o)
	if in.AmountMinor != nil {
		merged.AmountMinor = *in.AmountMinor
	}
	if in.Currency != nil {
		merged.Currency = strings.ToUpper(*in.Currency)
	}
	if in.Lines != nil {
		merged.Lines = *in.Lines
	}
	if in.PSPPaymentID != nil {
		merged.PSPPaymentID = in.PSPPaymentID
		// A payment recorded for another order is that order's: its
		// column may be empty (Order.PSPPaymentID), so the unique index
		// alone does not refuse it.
		if of, ok, err := tx.OrderOfPayment(ctx, *in.PSPPaymentID); err != nil {
			return store.Order{}, err
		} else if ok && of.ID != o.ID {
			return store.Order{}, errkind.New(errkind.Conflict, "payment %s is recorded for order %s", *in.PSPPaymentID, of.MerchantOrderID)
		}
	}
	if errs := validateOrder(merged); len(errs) > 0 {
		return store.Order{}, errs
	}
	paid, err := tx.LockOrdersPaid(ctx, []store.PaidCheck{{OrderID: o.ID}})
	if err != nil {
		return store.Order{}, err
	}
	for _, p := range paid {
		if p.AmountMinor != merged.AmountMinor || p.Currency != merged.Currency ||
			(merged.PSPPaymentID != nil && *merged.PSPPaymentID != p.ID) {
			return store.Order{}, errkind.Coded(errkind.Conflict, "contradicts_paid_payment",
				"the order's payment %s is PAID for %d %s: the change would contradict it", p.ID, p.AmountMinor, p.Currency)
		}
	}
	lines, err := json.Marshal(merged.Lines)
	if err != nil {
		return store.Order{}, err
	}
	o.AmountMinor, o.Currency, o.Lines, o.PSPPaymentID = merged.AmountMinor, merged.Currency, lines, merged.PSPPaymentID
	return tx.AmendOrder(ctx, o)
}

// Error makes fieldErrors an error, so a transaction can return them.
func (f fieldErrors) Error() string { return "invalid fields" }

func asFieldErrors(err error, fe *fieldErrors) bool { return errors.As(err, fe) }
