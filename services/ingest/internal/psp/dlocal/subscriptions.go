package dlocal

import (
	"context"
	"fmt"
	"net/url"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/ingest/internal/psp"
)

// PaymentsOfSubscriptions lists every execution of each subscription one of
// known names (payment ids ingest recorded for one recurring order; the
// ids of ordinary payments are skipped), the poller's way to an execution
// whose every notification was lost. dLocal lists a subscription's
// executions under its plan, so one known execution of each subscription is
// fetched for the plan id, then
// GET /v1/subscription/plan/{plan_id}/subscription/{subscription_id}/execution/all
// is read page by page.
func (c *Client) PaymentsOfSubscriptions(ctx context.Context, known []string) ([]psp.Payment, error) {
	var out []psp.Payment
	for sub, exec := range subscriptionsOf(known) {
		pays, err := c.executionsOf(ctx, sub, exec)
		if err != nil {
			return nil, err
		}
		out = append(out, pays...)
	}
	return out, nil
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

// executionsOf lists the executions of subscription sub, of which
// execution known is one.
func (c *Client) executionsOf(ctx context.Context, sub, known string) ([]psp.Payment, error) {
	w, err := c.executionWire(ctx, sub, known)
	if err != nil {
		return nil, fmt.Errorf("plan of subscription %s: %w", sub, err)
	}
	if w.Subscription.Plan.ID == "" {
		return nil, errkind.New(errkind.Unavailable, "plan of subscription %s: execution %s names no plan", sub, known)
	}
	path := "/v1/subscription/plan/" + url.PathEscape(string(w.Subscription.Plan.ID)) + "/subscription/" + url.PathEscape(sub) + "/execution/all"
	var out []psp.Payment
	err = eachPage(ctx, c, path, url.Values{"page_size": {"100"}}, func(e executionWire) error {
		p, err := e.payment(sub)
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}
