package pspsim

import (
	"net/http"
	"slices"

	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// The listings of plans and of a plan's subscriptions (docs/wire-dlocal.md,
// "Subscriptions": paths read from merchant integrations, the page shape
// assumed like GET /payments').

// errPlanNotFound: a code of ours, as dLocal's for a plan is unknown.
var errPlanNotFound = apiError{Status: http.StatusNotFound, Code: 4012, Message: "Plan not found"}

// listPlans answers GET /v1/subscription/plan/all: every plan, by id, a
// page at a time.
func (s *Server) listPlans(w http.ResponseWriter, r *http.Request, _ []byte) {
	f, apiErr := parseListFilter(r)
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	s.mu.Lock()
	all := []plan{}
	for _, p := range s.plans {
		all = append(all, *p)
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b plan) int { return int(a.ID - b.ID) })
	server.WriteJSON(w, http.StatusOK, pageOf(all, f))
}

// listSubscriptions answers
// GET /v1/subscription/plan/{plan_id}/subscription/all: the plan's
// subscriptions, cancelled ones included, by id, a page at a time.
func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request, _ []byte) {
	f, apiErr := parseListFilter(r)
	if apiErr != nil {
		writeError(w, *apiErr)
		return
	}
	planID := parseID(r.PathValue("plan_id"))
	s.mu.Lock()
	_, ok := s.plans[planID]
	all := []subscription{}
	for _, sub := range s.subscriptions {
		if sub.Plan.ID == planID {
			all = append(all, *sub)
		}
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, errPlanNotFound)
		return
	}
	slices.SortFunc(all, func(a, b subscription) int { return int(a.ID - b.ID) })
	server.WriteJSON(w, http.StatusOK, pageOf(all, f))
}
