package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/onceflow/onceflow/pkg/money"
)

// PSPs are the PSPs the sandbox binary speaks and ingest's sources name,
// each notified at the ingest route /webhooks/<psp>.
var PSPs = []string{"dlocal", "stripe", "mercadopago"}

// objectID reads an object's id, a string (dLocal, Stripe) or a number
// (Mercado Pago).
type objectID struct {
	ID json.RawMessage `json:"id"`
}

func (o objectID) id() string { return strings.Trim(string(o.ID), `"`) }

// PayAt creates a payment of amountMinor UYU for the merchant's orderID at
// psp's sandbox, notified to the ingest instance at ingest, and returns its
// id as ingest keys it (payment:<id>).
func (s *Stack) PayAt(ctx context.Context, psp, orderID string, amountMinor int64, ingest string) (string, error) {
	hook := ingest + "/webhooks/" + psp
	var out objectID
	var err error
	switch psp {
	case "dlocal":
		return s.CreatePayment(ctx, orderID, amountMinor, hook)
	case "stripe":
		err = s.call(ctx, s.PSPURL+"/stripe/sandbox/payment_intents", map[string]any{"amount": amountMinor, "currency": "UYU",
			"order_id": orderID, "notify_url": hook}, &out, nil)
	case "mercadopago":
		err = s.call(ctx, s.PSPURL+"/mercadopago/sandbox/payments", map[string]any{"amount": json.Number(money.FormatMinor(amountMinor)),
			"currency": "UYU", "external_reference": orderID, "notify_url": hook}, &out, nil)
	default:
		return "", fmt.Errorf("no PSP %q in the sandbox", psp)
	}
	if err != nil {
		return "", fmt.Errorf("create %s payment: %w", psp, err)
	}
	return out.id(), nil
}

// PayStripePresented creates a succeeded Stripe PaymentIntent of
// amountMinor in currency for the merchant's orderID that the customer
// paid presentedMinor in presentedCurrency (Adaptive Pricing's
// presentment_details), notified to the ingest instance at ingest, and
// returns its id.
func (s *Stack) PayStripePresented(ctx context.Context, orderID string, amountMinor int64, currency string,
	presentedMinor int64, presentedCurrency, ingest string) (string, error) {
	var out objectID
	err := s.call(ctx, s.PSPURL+"/stripe/sandbox/payment_intents", map[string]any{"amount": amountMinor, "currency": currency,
		"order_id": orderID, "notify_url": ingest + "/webhooks/stripe",
		"presentment_amount": presentedMinor, "presentment_currency": presentedCurrency}, &out, nil)
	if err != nil {
		return "", fmt.Errorf("create stripe payment: %w", err)
	}
	return out.id(), nil
}

// PaidAt reports whether payment id is paid at psp's sandbox (dLocal PAID,
// Stripe succeeded, Mercado Pago approved), with the status it has.
func (s *Stack) PaidAt(ctx context.Context, psp, id string) (bool, string, error) {
	var base, paid string
	switch psp {
	case "dlocal":
		st, err := s.PaymentStatus(ctx, id)
		return st == "PAID", st, err
	case "stripe":
		base, paid = s.PSPURL+"/stripe/v1/payment_intents/", "succeeded"
	case "mercadopago":
		base, paid = s.PSPURL+"/mercadopago/v1/payments/", "approved"
	default:
		return false, "", fmt.Errorf("no PSP %q in the sandbox", psp)
	}
	var p struct {
		Status string `json:"status"`
	}
	err := s.request(ctx, http.MethodGet, base+id, nil, &p, func(req *http.Request, _ []byte) {
		req.Header.Set("Authorization", "Bearer "+map[string]string{"stripe": StripeKey, "mercadopago": MPToken}[psp])
	})
	return p.Status == paid, p.Status, err
}

// RefundAt refunds amountMinor of payment id at psp's sandbox and returns
// the refund's id as ingest keys it (refund:<id>; Mercado Pago's is
// <payment id>-<refund id>). dLocal notifies the ingest instance at
// ingest; Stripe and Mercado Pago notify where they notify the payment.
func (s *Stack) RefundAt(ctx context.Context, psp, id string, amountMinor int64, ingest string) (string, error) {
	var out objectID
	var err error
	switch psp {
	case "dlocal":
		return s.RefundTo(ctx, id, amountMinor, ingest+"/webhooks/dlocal")
	case "stripe":
		err = s.call(ctx, s.PSPURL+"/stripe/sandbox/payment_intents/"+id+"/refund", map[string]any{"amount": amountMinor}, &out, nil)
	case "mercadopago":
		err = s.call(ctx, s.PSPURL+"/mercadopago/sandbox/payments/"+id+"/refund", map[string]any{"amount_minor": amountMinor}, &out, nil)
		if _, perr := strconv.ParseInt(out.id(), 10, 64); err == nil && perr == nil {
			return id + "-" + out.id(), nil
		}
	default:
		return "", fmt.Errorf("no PSP %q in the sandbox", psp)
	}
	if err != nil || out.id() == "" || psp == "mercadopago" {
		return "", fmt.Errorf("create %s refund: %v (id %q)", psp, err, out.id())
	}
	return out.id(), nil
}

// ChargebackAt has payment id charged back at psp's sandbox, which
// notifies it: dLocal's CHARGEBACK status, a Stripe dispute, Mercado
// Pago's charged_back.
func (s *Stack) ChargebackAt(ctx context.Context, psp, id string) error {
	switch psp {
	case "dlocal":
		return s.call(ctx, s.PSPURL+"/sandbox/payments/"+id+"/chargeback", nil, nil, nil)
	case "stripe":
		return s.call(ctx, s.PSPURL+"/stripe/sandbox/payment_intents/"+id+"/dispute", nil, nil, nil)
	case "mercadopago":
		return s.call(ctx, s.PSPURL+"/mercadopago/sandbox/payments/"+id+"/status", map[string]any{"status": "charged_back"}, nil, nil)
	}
	return fmt.Errorf("no PSP %q in the sandbox", psp)
}
