package adminapi

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/cases"
)

// CaseFilter narrows the open cases the inbox lists; zero fields filter
// nothing.
type CaseFilter struct {
	Kind      string
	PSP       string
	MinAge    time.Duration
	MinAmount int64 // minor units
	MaxAmount int64 // minor units; 0 is no maximum
}

// Match reports whether c passes f, at now.
func (f CaseFilter) Match(c cases.View, now time.Time) bool {
	if f.PSP != "" && !strings.EqualFold(c.PSP, f.PSP) {
		return false
	}
	if f.MinAge > 0 {
		opened, err := time.Parse(time.RFC3339Nano, c.OpenedAt)
		if err != nil || now.Sub(opened) < f.MinAge {
			return false
		}
	}
	if f.MinAmount > 0 || f.MaxAmount > 0 {
		if c.AmountMinor == nil || *c.AmountMinor < f.MinAmount || (f.MaxAmount > 0 && *c.AmountMinor > f.MaxAmount) {
			return false
		}
	}
	return true
}

// Cases lists the open cases passing f, oldest first, through the
// reconciler's union of every service's cases (at most 1000).
func (c *Client) Cases(ctx context.Context, f CaseFilter) ([]cases.View, error) {
	q := url.Values{"status": {"open"}, "limit": {"1000"}}
	if f.Kind != "" {
		q.Set("kind", f.Kind)
	}
	var page struct {
		Cases []cases.View `json:"cases"`
	}
	if err := c.Get(ctx, "reconciler", "/admin/cases", q, &page); err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]cases.View, 0, len(page.Cases))
	for _, k := range page.Cases {
		if f.Match(k, now) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Case returns case id ("<service>-<n>").
func (c *Client) Case(ctx context.Context, id string) (cases.View, error) {
	var k cases.View
	err := c.Get(ctx, "reconciler", "/admin/cases/"+url.PathEscape(id), nil, &k)
	return k, err
}

// Resolution is an operator's decision on a case: the action, who took it
// and why, the refund id refunded_at_psp needs, and the provider's series
// and number adopt needs.
type Resolution struct {
	Action      string `json:"action"`
	Actor       string `json:"actor"`
	Reason      string `json:"reason"`
	PSPRefundID string `json:"psp_refund_id,omitempty"`
	Series      string `json:"series,omitempty"`
	Number      int64  `json:"number,omitempty"`
}

// Resolve closes case k with r at the service that owns it; a parked
// outbox row is unparked through the relay, whose producer's trigger
// closes the case with r's actor and reason.
func (c *Client) Resolve(ctx context.Context, k cases.View, r Resolution) error {
	if k.Kind == cases.ParkedOutboxRow {
		row, ok := strings.CutPrefix(k.Subject, "outbox:")
		if _, err := strconv.ParseInt(row, 10, 64); !ok || err != nil {
			return fmt.Errorf("case %s: subject %q names no outbox row", k.ID, k.Subject)
		}
		return c.Post(ctx, "relay", "/admin/outboxes/"+k.Service+".outbox/parked/"+row+"/unpark",
			map[string]string{"actor": r.Actor, "reason": r.Reason}, nil)
	}
	_, n, ok := cases.ParseID(k.ID)
	if !ok {
		return fmt.Errorf("case id %q: want <service>-<n>", k.ID)
	}
	path := "/admin/cases/" + strconv.FormatInt(n, 10) + "/resolve"
	if k.Service == "reconciler" {
		path = "/admin/cases/" + k.ID + "/resolve"
	}
	return c.Post(ctx, k.Service, path, r, nil)
}

// Actions is what closes k: the actions its service lists, or unpark for
// a parked outbox row (closed through the relay).
func Actions(k cases.View) []string {
	if k.ClosedAt != "" {
		return nil
	}
	if k.Kind == cases.ParkedOutboxRow {
		return []string{cases.ActionUnpark}
	}
	return k.Actions
}
