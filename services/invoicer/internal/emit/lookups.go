package emit

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// lookup asks the provider what it holds under ref. The call is recorded as
// "status" for a document already pending at DGI and "lookup" otherwise.
func (e *Emitter) lookup(ctx context.Context, d store.Document, ref string, c *calls) ([]fiscal.Held, error) {
	op := "lookup"
	if d.Status == fiscal.StatusPendingDGI {
		op = "status"
	}
	start := time.Now()
	held, err := e.provider.Lookup(ctx, ref)
	c.add(e.attempt(d.ID, op, start, foundOf(len(held)), err))
	return held, err
}

// foundOf names how many documents a look-up returned, for the attempt log.
func foundOf(n int) string {
	switch n {
	case 0:
		return "none"
	case 1:
		return "one"
	}
	return "several"
}

// fresh reports whether d is a document no send can have reached: still
// pending, with no send marked as possibly in flight since it was last known
// unsent (a send refused surely did not act). The provider holds nothing
// under its reference unless another system used it, so its look-up may be
// made together with others' (lookUpTogether).
func (e *Emitter) fresh(d store.Document) bool {
	return e.many != nil && !e.cfg.Blind && d.Status == fiscal.StatusPending && d.UnknownSince == nil
}

// lookUpTogether asks the provider in one call what it holds under the
// references of jobs, all fresh and built, and decides each from what was
// found under its own reference, as work does; each look-up is recorded
// for its document, with the call's latency. Should the answer hold a
// document under a reference none of them asked for, each is looked up
// alone, so the one it concerns sees it.
func (e *Emitter) lookUpTogether(ctx context.Context, jobs []*job, clock dbClock) {
	if len(jobs) == 0 {
		return
	}
	refs := make([]string, len(jobs))
	for i, j := range jobs {
		refs[i] = j.doc.Reference
	}
	start := time.Now()
	held, err := e.many.LookupReferences(ctx, refs)
	byRef, ok := byReference(held, refs)
	for _, j := range jobs {
		d, doc := j.d, *j.doc
		if err == nil && !ok {
			j.res, j.doc = e.work(j.ctx, d, clock.now(), &j.calls)
			continue
		}
		found := byRef[doc.Reference]
		j.calls.add(e.attempt(d.ID, "lookup", start, foundOf(len(found)), err))
		j.res, j.doc = e.decide(j.ctx, d, doc, found, err, clock.now())
	}
}

// byReference groups held by reference; false when one is under a
// reference not in refs.
func byReference(held []fiscal.Held, refs []string) (map[string][]fiscal.Held, bool) {
	out := make(map[string][]fiscal.Held, len(refs))
	for _, r := range refs {
		out[r] = nil
	}
	for _, h := range held {
		if _, asked := out[h.Reference]; !asked {
			return nil, false
		}
		out[h.Reference] = append(out[h.Reference], h)
	}
	return out, true
}
