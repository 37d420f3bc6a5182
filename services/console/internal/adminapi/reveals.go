package adminapi

import (
	"context"
	"net/url"
	"sort"
	"strconv"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/reveals"
)

// revealers are the services that hold personal data and record its
// reveals.
var revealers = []string{"ingest", "invoicer", "reconciler"}

// RevealCase asks the service that owns case k for it with its evidence
// unmasked, on behalf of actor with reason; the owner records the reveal
// before it answers.
func (c *Client) RevealCase(ctx context.Context, k cases.View, actor, reason string) (cases.View, error) {
	path := "/admin/cases/" + url.PathEscape(k.ID) + "/reveal"
	var out cases.View
	err := c.Post(ctx, k.Service, path, reveals.Request{Actor: actor, Reason: reason}, &out)
	return out, err
}

// Reveals lists the newest recorded reveals of every service that holds
// personal data (at most limit of each), newest first; errs names the
// services that did not answer.
func (c *Client) Reveals(ctx context.Context, limit int) (all []reveals.Reveal, errs map[string]string) {
	errs = map[string]string{}
	for _, svc := range revealers {
		var page struct {
			Reveals []reveals.Reveal `json:"reveals"`
		}
		if err := c.Get(ctx, svc, "/admin/reveals", url.Values{"limit": {strconv.Itoa(limit)}}, &page); err != nil {
			errs[svc] = err.Error()
			continue
		}
		all = append(all, page.Reveals...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At.After(all[j].At) })
	return all, errs
}
