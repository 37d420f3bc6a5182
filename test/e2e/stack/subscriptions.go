package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/onceflow/onceflow/pkg/money"
)

// Subscription is a buyer's subscription at the PSP sandbox's dLocal.
type Subscription struct {
	PlanID int64 `json:"-"`
	ID     int64 `json:"id"`
}

// Subscribe creates a monthly plan of amountMinor UYU notified at
// notifyURL, and the buyer's subscription to it for the merchant's order
// (its external_id).
func (s *Stack) Subscribe(ctx context.Context, orderID string, amountMinor int64, notifyURL string) (Subscription, error) {
	plan, err := s.CreatePlan(ctx, amountMinor, notifyURL)
	if err != nil {
		return Subscription{}, err
	}
	return s.SubscribeTo(ctx, plan, orderID)
}

// CreatePlan creates a monthly plan of amountMinor UYU notified at
// notifyURL at the sandbox's dLocal and returns its id.
func (s *Stack) CreatePlan(ctx context.Context, amountMinor int64, notifyURL string) (int64, error) {
	var plan struct {
		ID int64 `json:"id"`
	}
	err := s.call(ctx, s.PSPURL+"/v1/subscription/plan", map[string]any{
		"name": "Monthly credits", "amount": json.Number(money.FormatMinor(amountMinor)), "currency": "UYU",
		"frequency_type": "MONTHLY", "frequency_value": 1, "notification_url": notifyURL,
	}, &plan, s.dlocalSign)
	if err != nil {
		return 0, fmt.Errorf("create plan: %w", err)
	}
	return plan.ID, nil
}

// SubscribeTo subscribes the buyer to plan for the merchant's order (its
// external_id).
func (s *Stack) SubscribeTo(ctx context.Context, plan int64, orderID string) (Subscription, error) {
	sub := Subscription{PlanID: plan}
	if err := s.call(ctx, s.PSPURL+"/sandbox/subscriptions", map[string]any{"plan_id": plan, "external_id": orderID}, &sub, nil); err != nil {
		return Subscription{}, fmt.Errorf("subscribe: %w", err)
	}
	return sub, nil
}

// Execute charges the subscription's next period at the sandbox, which
// notifies it, and returns the execution's id.
func (s *Stack) Execute(ctx context.Context, sub Subscription) (string, error) {
	return s.execute(ctx, sub, nil)
}

// ExecuteSilently charges the subscription's next period at the sandbox,
// which never notifies it, and returns the execution's id.
func (s *Stack) ExecuteSilently(ctx context.Context, sub Subscription) (string, error) {
	return s.execute(ctx, sub, map[string]any{"silent": true})
}

func (s *Stack) execute(ctx context.Context, sub Subscription, req any) (string, error) {
	var e struct {
		ID string `json:"id"`
	}
	err := s.call(ctx, fmt.Sprintf("%s/sandbox/subscriptions/%d/execute", s.PSPURL, sub.ID), req, &e, nil)
	return e.ID, err
}

// RenotifyExecution makes the sandbox deliver an execution's current
// notification copies more times.
func (s *Stack) RenotifyExecution(ctx context.Context, sub Subscription, executionID string, copies int) error {
	return s.call(ctx, fmt.Sprintf("%s/sandbox/subscriptions/%d/executions/%s/notify?copies=%d", s.PSPURL, sub.ID, executionID, copies), nil, nil, nil)
}

// CancelSubscription deactivates the subscription at the sandbox.
func (s *Stack) CancelSubscription(ctx context.Context, sub Subscription) error {
	return s.request(ctx, http.MethodPatch, fmt.Sprintf("%s/v1/subscription/plan/%d/subscription/%d/deactivate", s.PSPURL, sub.PlanID, sub.ID),
		nil, nil, s.dlocalSign)
}

// ExecutionPaymentID is the payment id ingest records an execution under
// (docs/wire-dlocal.md, "Subscriptions").
func ExecutionPaymentID(sub Subscription, executionID string) string {
	return fmt.Sprintf("SUB-%d-%s", sub.ID, executionID)
}
