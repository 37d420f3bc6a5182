package pspsim

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// Subscriptions follow the shapes of dLocal's subscription API
// (docs/wire-dlocal.md, "Subscriptions"): a plan fixes the amount, currency
// and period; a buyer's subscription to it is charged once per period, and
// each charge is an execution with its own id and status, notified like a
// payment.

// Execution statuses as dLocal writes them.
const (
	execPending   = "PENDING"
	execCompleted = "COMPLETED"
	execDeclined  = "DECLINED"
)

// plan is a subscription plan.
type plan struct {
	ID              int64  `json:"id"`
	Name            string `json:"name"`
	Amount          amount `json:"amount"`
	Currency        string `json:"currency"`
	FrequencyType   string `json:"frequency_type"`
	FrequencyValue  int    `json:"frequency_value"`
	NotificationURL string `json:"notification_url,omitempty"`
	Active          bool   `json:"active"`
}

// subscription is a buyer's subscription to a plan; ExternalID is the
// merchant's reference passed on the subscribe link (our order id).
type subscription struct {
	ID         int64  `json:"id"`
	Plan       plan   `json:"plan"`
	ExternalID string `json:"external_id"`
	Status     string `json:"status"` // CONFIRMED, then CANCELLED
	Active     bool   `json:"active"`
	CreatedAt  string `json:"created_at"`

	executions []string // execution ids, oldest first
}

// execution is one period's charge of a subscription.
type execution struct {
	ID             string `json:"id"`
	SubscriptionID int64  `json:"subscription_id"`
	ExternalID     string `json:"external_id"`
	OrderID        string `json:"order_id"` // dLocal's own order of the charge
	Status         string `json:"status"`
	AmountPaid     amount `json:"amount_paid"`
	Currency       string `json:"currency"`
	CreatedAt      string `json:"created_at"`
	Subscription   struct {
		ID   int64 `json:"id"`
		Plan plan  `json:"plan"`
	} `json:"subscription"`
}

type planRequest struct {
	Name            string      `json:"name"`
	Amount          json.Number `json:"amount"`
	Currency        string      `json:"currency"`
	FrequencyType   string      `json:"frequency_type"`
	FrequencyValue  int         `json:"frequency_value"`
	NotificationURL string      `json:"notification_url"`
}

// frequencies are the periods a plan may have.
var frequencies = map[string]bool{"DAILY": true, "WEEKLY": true, "MONTHLY": true, "YEARLY": true}

// createPlan answers POST /v1/subscription/plan.
func (s *Server) createPlan(w http.ResponseWriter, _ *http.Request, body []byte) {
	var req planRequest
	if !decodeJSON(w, body, &req) {
		return
	}
	minor, err := money.ParseMinor(req.Amount.String())
	switch {
	case err != nil || minor <= 0:
		writeError(w, invalidParam("amount"))
		return
	case !currencyRE.MatchString(req.Currency):
		writeError(w, invalidParam("currency"))
		return
	case !frequencies[req.FrequencyType]:
		writeError(w, invalidParam("frequency_type"))
		return
	}
	p := plan{Name: req.Name, Amount: amount(minor), Currency: req.Currency, FrequencyType: req.FrequencyType,
		FrequencyValue: max(req.FrequencyValue, 1), NotificationURL: req.NotificationURL, Active: true}
	s.mu.Lock()
	s.lastPlan++
	p.ID = s.lastPlan
	s.plans[p.ID] = &p
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, p)
}

// subscribeRequest stands in for the buyer subscribing on dLocal's checkout.
type subscribeRequest struct {
	PlanID     int64  `json:"plan_id"`
	ExternalID string `json:"external_id"`
}

// subscribe answers POST /sandbox/subscriptions: the buyer's subscription,
// confirmed, with no execution yet.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request) {
	var req subscribeRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.ExternalID == "" {
		writeError(w, invalidParam("external_id"))
		return
	}
	s.mu.Lock()
	p, ok := s.plans[req.PlanID]
	if !ok || !p.Active {
		s.mu.Unlock()
		writeError(w, invalidParam("plan_id"))
		return
	}
	s.lastSubscription++
	sub := &subscription{ID: s.lastSubscription, Plan: *p, ExternalID: req.ExternalID, Status: "CONFIRMED", Active: true,
		CreatedAt: s.cfg.Now().UTC().Format(dateLayout)}
	s.subscriptions[sub.ID] = sub
	out := *sub
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, out)
}

// executeRequest chooses a period's outcome: COMPLETED (the default),
// DECLINED, or PENDING (a charge awaiting approval, completed later with
// POST /sandbox/subscriptions/{id}/executions/{execution_id}/status);
// Silent loses every notification of it for good.
type executeRequest struct {
	Status string `json:"status"`
	Silent bool   `json:"silent"`
}

// execute answers POST /sandbox/subscriptions/{id}/execute: the next
// period's charge, notified unless silent. A cancelled subscription is
// charged no more (400, code 5002). With the pending-first fault a
// completed charge is notified PENDING first and completes PSP_PENDING_FOR
// later.
func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	var req executeRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Status == "" {
		req.Status = execCompleted
	}
	if req.Status != execCompleted && req.Status != execDeclined && req.Status != execPending {
		writeError(w, invalidParam("status"))
		return
	}
	pendingFirst := req.Status == execCompleted && !req.Silent && s.notes.PendingFirst()
	status := req.Status
	if pendingFirst {
		status = execPending
	}
	e, apiErr := s.newExecution(r.PathValue("id"), status)
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	s.log.Info("subscription executed", zap.Int64("subscription_id", e.SubscriptionID), zap.String("execution_id", e.ID), zap.String("status", e.Status))
	server.WriteJSON(w, http.StatusOK, e)
	if req.Silent {
		return
	}
	s.notifyExecution(e)
	if pendingFirst {
		s.notes.Later(s.cfg.Faults.PendingFor, func() {
			if done, ok := s.setExecutionStatus(e.SubscriptionID, e.ID, execCompleted); ok {
				s.notifyExecution(done)
			}
		})
	}
}

// newExecution records the next execution of subscription id in status.
func (s *Server) newExecution(id, status string) (execution, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subscriptions[parseID(id)]
	switch {
	case !ok:
		return execution{}, ptr(errSubscriptionNotFound)
	case !sub.Active:
		return execution{}, ptr(errInvalidStatus)
	}
	now := s.cfg.Now().UTC()
	e := &execution{ID: "ST-" + strconv.FormatInt(sub.ID, 10) + "-" + strconv.Itoa(len(sub.executions)),
		SubscriptionID: sub.ID, ExternalID: sub.ExternalID, OrderID: uuid.NewString(), Status: status,
		AmountPaid: sub.Plan.Amount, Currency: sub.Plan.Currency, CreatedAt: now.Format(dateLayout)}
	e.Subscription.ID, e.Subscription.Plan = sub.ID, sub.Plan
	sub.executions = append(sub.executions, e.ID)
	s.executions[e.ID] = e
	return *e, nil
}

// setExecutionStatus changes an execution's status and returns a snapshot.
func (s *Server) setExecutionStatus(subID int64, id, status string) (execution, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.executions[id]
	if !ok || e.SubscriptionID != subID {
		return execution{}, false
	}
	e.Status = status
	return *e, true
}

// notifyExecution sends e's current state in the background, signed as
// every dLocal notification, to its plan's notification_url (else
// Config.NotifyURL), with the faults; a COMPLETED one may be followed by a
// stale PENDING copy.
func (s *Server) notifyExecution(e execution) {
	body, err := json.Marshal(e)
	if err != nil {
		s.log.Error("encode execution notification", zap.String("execution_id", e.ID), zap.Error(err))
		return
	}
	url := s.target(e.Subscription.Plan.NotificationURL)
	s.notifyAsync("execution", e.ID, url, body)
	if e.Status != execCompleted || !s.notes.StaleAfterPaid() {
		return
	}
	stale := e
	stale.Status = execPending
	if body, err = json.Marshal(stale); err == nil {
		s.notifyAfter(s.cfg.Faults.DelayMax, "execution", e.ID, url, body)
	}
}

// execution returns a snapshot of execution id of subscription subID.
func (s *Server) execution(subID, id string) (execution, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.executions[id]
	if !ok || strconv.FormatInt(e.SubscriptionID, 10) != subID {
		return execution{}, false
	}
	return *e, true
}

// getExecution answers GET /v1/subscription/{subscription_id}/execution/{execution_id}.
func (s *Server) getExecution(w http.ResponseWriter, r *http.Request, _ []byte) {
	e, ok := s.execution(r.PathValue("subscription_id"), r.PathValue("execution_id"))
	if !ok {
		writeError(w, errExecutionNotFound)
		return
	}
	server.WriteJSON(w, http.StatusOK, e)
}

// subscriptionOf returns subscription subID of plan planID, with its lock
// held by the caller.
func (s *Server) subscriptionOf(planID, subID string) (*subscription, bool) {
	sub, ok := s.subscriptions[parseID(subID)]
	if !ok || strconv.FormatInt(sub.Plan.ID, 10) != planID {
		return nil, false
	}
	return sub, true
}

// listExecutions answers
// GET /v1/subscription/plan/{plan_id}/subscription/{subscription_id}/execution/all:
// the subscription's executions, oldest first, a page at a time.
func (s *Server) listExecutions(w http.ResponseWriter, r *http.Request, _ []byte) {
	f, apiErr := parseListFilter(r)
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	s.mu.Lock()
	sub, ok := s.subscriptionOf(r.PathValue("plan_id"), r.PathValue("subscription_id"))
	var all []execution
	if ok {
		for _, id := range sub.executions {
			all = append(all, *s.executions[id])
		}
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, errSubscriptionNotFound)
		return
	}
	server.WriteJSON(w, http.StatusOK, pageOf(all, f))
}

// deactivate answers
// PATCH /v1/subscription/plan/{plan_id}/subscription/{subscription_id}/deactivate:
// the subscription is cancelled and charged no more; its executions stay
// as they are (what was paid stays paid).
func (s *Server) deactivate(w http.ResponseWriter, r *http.Request, _ []byte) {
	s.mu.Lock()
	sub, ok := s.subscriptionOf(r.PathValue("plan_id"), r.PathValue("subscription_id"))
	var out subscription
	if ok {
		sub.Status, sub.Active = "CANCELLED", false
		out = *sub
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, errSubscriptionNotFound)
		return
	}
	s.log.Info("subscription cancelled", zap.Int64("subscription_id", out.ID))
	server.WriteJSON(w, http.StatusOK, out)
}

// resendExecution answers POST /sandbox/subscriptions/{id}/executions/{execution_id}/notify:
// the execution's current state again, ?copies=N times.
func (s *Server) resendExecution(w http.ResponseWriter, r *http.Request) {
	e, ok := s.execution(r.PathValue("id"), r.PathValue("execution_id"))
	if !ok {
		writeError(w, errExecutionNotFound)
		return
	}
	s.resend(w, r, "execution", e.ID, s.target(e.Subscription.Plan.NotificationURL), e)
}

// executionStatusRequest moves an execution to Status, notified unless
// Silent (a notification lost for good).
type executionStatusRequest struct {
	Status string `json:"status"`
	Silent bool   `json:"silent"`
}

// forceExecutionStatus answers
// POST /sandbox/subscriptions/{id}/executions/{execution_id}/status.
func (s *Server) forceExecutionStatus(w http.ResponseWriter, r *http.Request) {
	var req executionStatusRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Status != execCompleted && req.Status != execDeclined && req.Status != execPending {
		writeError(w, invalidParam("status"))
		return
	}
	e, ok := s.setExecutionStatus(parseID(r.PathValue("id")), r.PathValue("execution_id"), req.Status)
	if !ok {
		writeError(w, errExecutionNotFound)
		return
	}
	server.WriteJSON(w, http.StatusOK, e)
	if !req.Silent {
		s.notifyExecution(e)
	}
}

// parseID reads a numeric id, 0 (no object) when it is not one.
func parseID(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}
