package dlocal

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

// dLocal lists a subscription's executions only under the subscription and
// its plan (docs/wire-dlocal.md, "Subscriptions"), so every way to an
// execution ingest never heard of walks plans and subscriptions:
// GET /v1/subscription/plan/all, then
// GET /v1/subscription/plan/{plan_id}/subscription/all, then
// GET /v1/subscription/plan/{plan_id}/subscription/{subscription_id}/execution/all,
// each read page by page.

// idWire is the part of a plan or subscription object ingest reads.
type idWire struct {
	ID         code   `json:"id"` // a number, read as text
	ExternalID string `json:"external_id"`
}

// fullPages is the query of a subscription listing: pages of 100, the
// largest the sandbox serves.
func fullPages() url.Values { return url.Values{"page_size": {"100"}} }

// PaymentsOfSubscriptions lists every execution of the subscriptions of
// one recurring order, the poller's way to an execution whose every
// notification was lost: the subscriptions of the plan s names whose
// external_id is the order's reference (so a first execution is found
// too), and the subscription of each execution among the known payment
// ids (the ids of ordinary payments are skipped), whose plan is read from
// that execution.
func (c *Client) PaymentsOfSubscriptions(ctx context.Context, s psp.Subscriptions) ([]psp.Payment, error) {
	plans, err := c.plansOf(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []psp.Payment
	for sub, plan := range plans {
		pays, err := c.executionsOf(ctx, plan, sub)
		if err != nil {
			return nil, err
		}
		out = append(out, pays...)
	}
	return out, nil
}

// plansOf maps each subscription of s to its plan.
func (c *Client) plansOf(ctx context.Context, s psp.Subscriptions) (map[string]string, error) {
	plans := map[string]string{}
	if s.Plan != "" {
		err := c.eachSubscription(ctx, s.Plan, func(sub idWire) error {
			if sub.ExternalID == s.OrderRef {
				plans[string(sub.ID)] = s.Plan
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for sub, exec := range subscriptionsOf(s.Known) {
		if _, ok := plans[sub]; ok {
			continue
		}
		plan, err := c.planOf(ctx, sub, exec)
		if err != nil {
			return nil, err
		}
		plans[sub] = plan
	}
	return plans, nil
}

// subscriptionsOf maps the subscription of each execution among ids to
// one of its executions.
func subscriptionsOf(ids []string) map[string]string {
	subs := map[string]string{}
	for _, id := range ids {
		if sub, exec, ok := parseExecutionID(id); ok {
			subs[sub] = exec
		}
	}
	return subs
}

// planOf reads the plan of subscription sub from its execution exec.
func (c *Client) planOf(ctx context.Context, sub, exec string) (string, error) {
	w, err := c.executionWire(ctx, sub, exec)
	if err != nil {
		return "", fmt.Errorf("plan of subscription %s: %w", sub, err)
	}
	if w.Subscription.Plan.ID == "" {
		return "", errkind.New(errkind.Unavailable, "plan of subscription %s: execution %s names no plan", sub, exec)
	}
	return string(w.Subscription.Plan.ID), nil
}

// eachSubscription hands each subscription of plan to each.
func (c *Client) eachSubscription(ctx context.Context, plan string, each func(idWire) error) error {
	return eachPage(ctx, c, "/v1/subscription/plan/"+url.PathEscape(plan)+"/subscription/all", fullPages(), each)
}

// executionsOf lists the executions of subscription sub of plan.
func (c *Client) executionsOf(ctx context.Context, plan, sub string) ([]psp.Payment, error) {
	path := "/v1/subscription/plan/" + url.PathEscape(plan) + "/subscription/" + url.PathEscape(sub) + "/execution/all"
	var out []psp.Payment
	err := eachPage(ctx, c, path, fullPages(), func(e executionWire) error {
		p, err := e.payment(sub)
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// executionsCreated lists the executions created in [from, to) of every
// subscription of every plan, the PSP audit's view of the subscriptions.
func (c *Client) executionsCreated(ctx context.Context, from, to time.Time) ([]psp.Payment, error) {
	var out []psp.Payment
	err := eachPage(ctx, c, "/v1/subscription/plan/all", fullPages(), func(plan idWire) error {
		return c.eachSubscription(ctx, string(plan.ID), func(sub idWire) error {
			pays, err := c.executionsOf(ctx, string(plan.ID), string(sub.ID))
			for _, p := range pays {
				if !p.Created.Before(from) && p.Created.Before(to) {
					out = append(out, p)
				}
			}
			return err
		})
	})
	return out, err
}
