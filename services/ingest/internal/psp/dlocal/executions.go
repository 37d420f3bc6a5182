package dlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

// A subscription's execution (one period's charge, docs/wire-dlocal.md
// "Subscriptions") is a payment to ingest: its own receipt, state and
// invoice. dLocal addresses an execution by its subscription, so the
// payment id ingest records carries both: SUB-<subscription id>-<execution
// id>. dLocal's subscription ids are numbers, so the first dash after the
// prefix ends it.

// executionPrefix starts the payment id of an execution; no dLocal payment
// id starts so.
const executionPrefix = "SUB-"

// ExecutionPaymentID is the payment id ingest records execution executionID
// of subscription subscriptionID under; ok is false when either is empty or
// the subscription id holds a dash (the id could not be read back).
func ExecutionPaymentID(subscriptionID, executionID string) (id string, ok bool) {
	if subscriptionID == "" || executionID == "" || strings.Contains(subscriptionID, "-") {
		return "", false
	}
	return executionPrefix + subscriptionID + "-" + executionID, true
}

// parseExecutionID splits a payment id made by ExecutionPaymentID; ok is
// false for any other payment id.
func parseExecutionID(id string) (subscriptionID, executionID string, ok bool) {
	rest, ok := strings.CutPrefix(id, executionPrefix)
	if !ok {
		return "", "", false
	}
	subscriptionID, executionID, ok = strings.Cut(rest, "-")
	return subscriptionID, executionID, ok && subscriptionID != "" && executionID != ""
}

// ExecutionStatus maps an execution's status onto the normalized payment
// statuses: COMPLETED is PAID, DECLINED is REJECTED; PENDING stays, and an
// unknown one passes through (it ranks nowhere).
func ExecutionStatus(status string) string {
	switch s := strings.ToUpper(strings.TrimSpace(status)); s {
	case "COMPLETED":
		return psp.StatusPaid
	case "DECLINED":
		return psp.StatusRejected
	default:
		return s
	}
}

// executionWire is the part of an execution object ingest reads.
type executionWire struct {
	ID             string      `json:"id"`
	SubscriptionID code        `json:"subscription_id"` // a number, read as text
	ExternalID     string      `json:"external_id"`
	Status         string      `json:"status"`
	AmountPaid     json.Number `json:"amount_paid"`
	Currency       string      `json:"currency"`
	CheckoutCurr   string      `json:"checkout_currency"`
	CreatedAt      string      `json:"created_at"`
	Subscription   struct {
		Plan struct {
			ID code `json:"id"` // a number, read as text
		} `json:"plan"`
	} `json:"subscription"`
}

// execution fetches the execution payment id names:
// GET /v1/subscription/{subscription id}/execution/{execution id}. Its
// order reference is the subscription's external_id, the merchant order
// id the buyer subscribed with (a recurring order holding the buyer's
// fiscal profile for every execution).
func (c *Client) execution(ctx context.Context, id, subscriptionID, executionID string) (psp.Payment, error) {
	w, err := c.executionWire(ctx, subscriptionID, executionID)
	if err != nil {
		return psp.Payment{}, err
	}
	return w.payment(subscriptionID)
}

// executionWire fetches one execution as dLocal sent it.
func (c *Client) executionWire(ctx context.Context, subscriptionID, executionID string) (executionWire, error) {
	var w executionWire
	path := "/v1/subscription/" + url.PathEscape(subscriptionID) + "/execution/" + url.PathEscape(executionID)
	if err := c.get(ctx, path, &w); err != nil {
		return executionWire{}, fmt.Errorf("fetch subscription execution: %w", err)
	}
	if w.ID != executionID || string(w.SubscriptionID) != subscriptionID {
		return executionWire{}, errkind.New(errkind.Unavailable, "fetch execution %s of subscription %s: dLocal answered execution %s of subscription %s",
			executionID, subscriptionID, w.ID, w.SubscriptionID)
	}
	return w, nil
}

// payment decodes w, an execution of subscription subscriptionID, as the
// payment ingest records it under.
func (w executionWire) payment(subscriptionID string) (psp.Payment, error) {
	id, ok := ExecutionPaymentID(subscriptionID, w.ID)
	if !ok || string(w.SubscriptionID) != subscriptionID {
		return psp.Payment{}, errkind.New(errkind.Unavailable, "execution %q of subscription %q listed under subscription %s", w.ID, w.SubscriptionID, subscriptionID)
	}
	amount, err := money.ParseMinor(w.AmountPaid.String())
	if err != nil {
		return psp.Payment{}, errkind.Wrap(errkind.Unavailable, err, "execution "+id+": amount_paid")
	}
	created, err := parseDate(w.CreatedAt)
	if err != nil {
		return psp.Payment{}, errkind.Wrap(errkind.Unavailable, err, "execution "+id+": created_at")
	}
	currency := w.Currency
	if currency == "" {
		currency = w.CheckoutCurr
	}
	return psp.Payment{ID: id, Status: ExecutionStatus(w.Status), StatusCode: strings.ToUpper(w.Status), AmountMinor: amount,
		Currency: strings.ToUpper(currency), OrderID: w.ExternalID, Created: created}, nil
}
