package sweep

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/onceflow/onceflow/services/reconciler/internal/pspaudit"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// sweep runs src's recent pass and then, unless the run is capped, a slice
// of its full pass over the history before the recent pass's start.
func (r *run) sweep(ctx context.Context, src source, cutoff time.Time) error {
	st, err := r.own.SweepState(ctx, src.kind)
	if err != nil {
		return err
	}
	from := cutoff.Add(-r.cfg.Overlap) // no watermark yet: the full pass covers the rest
	if !st.Recent.At.IsZero() {
		from = st.Recent.At.Add(-r.cfg.Overlap)
	}
	began := time.Now()
	err = r.recent(ctx, src, store.Position{At: from}, cutoff)
	r.recentTook += time.Since(began)
	if err != nil || r.res.Capped {
		return err
	}
	began = time.Now()
	err = r.full(ctx, src, st.Full, from)
	r.fullTook += time.Since(began)
	return err
}

// recent checks src's rows final in [from, cutoff), saving the watermark
// after each page; once it is through, the watermark is cutoff. The rows
// of its overlap that the previous pass found with a valid document are
// counted but not looked up again, and the rows it finds with one that the
// next pass will read again take their place.
func (r *run) recent(ctx context.Context, src source, from store.Position, cutoff time.Time) error {
	known, found := r.knownValid(src.kind), map[string]time.Time{}
	stream := newDocStream(r.invoicer, src)
	keepFrom := cutoff.Add(-r.cfg.Overlap) // where the next pass starts reading
	after := from
	for {
		page, err := src.page(ctx, cutoff, after, r.cfg.PageSize)
		if err != nil {
			return err
		}
		r.metrics.checked.WithLabelValues("recent").Add(float64(len(page)))
		valid, err := r.check(ctx, src, page, known, stream)
		if err != nil || r.res.Capped {
			return err
		}
		for _, p := range page {
			if valid[p.ID] && !p.At.Before(keepFrom) {
				found[p.ID] = p.At
			}
		}
		if len(page) < r.cfg.PageSize {
			r.remember(src.kind, found)
			return r.own.AdvanceSweepRecent(ctx, src.kind, store.Position{At: cutoff})
		}
		after = page[len(page)-1]
		if err := r.own.AdvanceSweepRecent(ctx, src.kind, after); err != nil {
			return err
		}
	}
}

// full checks at most FullSlice of src's rows final before before, from
// the full pass's cursor, saving the cursor after each page; reaching
// before finishes the pass, and the next starts from the oldest.
func (r *run) full(ctx context.Context, src source, after store.Position, before time.Time) error {
	stream := newDocStream(r.invoicer, src)
	for budget := r.cfg.FullSlice; budget > 0; {
		limit := min(r.cfg.PageSize, budget)
		page, err := src.page(ctx, before, after, limit)
		if err != nil {
			return err
		}
		r.res.FullChecked += len(page)
		r.metrics.checked.WithLabelValues("full").Add(float64(len(page)))
		if _, err := r.check(ctx, src, page, nil, stream); err != nil || r.res.Capped {
			return err
		}
		if len(page) < limit {
			return r.own.FinishSweepFull(ctx, src.kind)
		}
		budget -= len(page)
		after = page[len(page)-1]
		if err := r.own.AdvanceSweepFull(ctx, src.kind, after); err != nil {
			return err
		}
	}
	return nil
}

// check counts page and asks ingest to announce again the events of its
// rows that have no document, until the run's cap, in requests of at most
// pspaudit.MaxRepublish keys. It returns which rows have a valid document:
// those in known, which it does not look up, those stream saw, and those
// it found by looking them up.
func (r *run) check(ctx context.Context, src source, page []store.Position, known map[string]time.Time, stream *docStream) (map[string]bool, error) {
	r.res.Checked += len(page)
	valid := make(map[string]bool, len(page))
	ask := make([]store.Position, 0, len(page))
	for _, p := range page {
		if _, ok := known[p.ID]; ok {
			valid[p.ID] = true
		} else {
			ask = append(ask, p)
		}
	}
	r.res.Known += len(page) - len(ask)
	r.metrics.known.Add(float64(len(page) - len(ask)))
	seen, ids, err := stream.split(ctx, ask)
	if err != nil {
		return nil, err
	}
	r.res.Streamed += len(seen)
	r.metrics.streamed.Add(float64(len(seen)))
	have, rest, err := r.withValid(ctx, src, ids)
	if err != nil {
		return nil, err
	}
	for _, id := range slices.Concat(seen, have) {
		valid[id] = true
	}
	missing, err := r.unheld(ctx, src, rest)
	if err != nil {
		return nil, err
	}
	for len(missing) > 0 {
		room := r.cfg.MaxPerRun - (r.res.Republished + r.res.Failed)
		if room <= 0 {
			r.res.Capped = true
			return valid, nil
		}
		n := min(len(missing), room, pspaudit.MaxRepublish)
		r.res.Missing += n
		if err := r.announce(ctx, src, missing[:n]); err != nil {
			return nil, err
		}
		missing = missing[n:]
	}
	return valid, nil
}

// announce asks ingest, in one request, to announce again the events of
// source ids (those retryFailed has not asked for this run) and opens (or
// refreshes) the missing_document case of each.
func (r *run) announce(ctx context.Context, src source, ids []string) error {
	var ask []string
	for _, id := range ids {
		if !r.retried[src.eventKey(id)] { // else retryFailed asked for it and opened its case
			ask = append(ask, id)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	outcomes, err := r.republish(ctx, src, ask)
	if err != nil {
		return err
	}
	for i, id := range ask {
		if err := r.openMissing(ctx, src, id, outcomes[i]); err != nil {
			return err
		}
	}
	return nil
}

// missing returns the ids that have neither a valid document of src's
// kind nor an open case about them in ingest or the invoicer (a case there
// already holds them in front of a person).
func (s *Sweeper) missing(ctx context.Context, src source, ids []string) ([]string, error) {
	_, rest, err := s.withValid(ctx, src, ids)
	if err != nil {
		return nil, err
	}
	return s.unheld(ctx, src, rest)
}

// withValid splits ids into those with a valid document of src's kind and
// the rest.
func (s *Sweeper) withValid(ctx context.Context, src source, ids []string) (have, rest []string, err error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	have, err = s.invoicer.SourcesWithValidDocument(ctx, src.kind, src.docKind, ids)
	if err != nil {
		return nil, nil, err
	}
	skip := make(map[string]bool, len(have))
	for _, ref := range have {
		skip[ref] = true
	}
	return have, without(ids, skip), nil
}

// unheld returns the ids no open case in ingest or the invoicer holds.
func (s *Sweeper) unheld(ctx context.Context, src source, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	held, err := s.invoicer.SourcesWithOpenCase(ctx, src.kind, ids)
	if err != nil {
		return nil, err
	}
	skip := make(map[string]bool, len(held))
	for _, id := range held {
		skip[id] = true
	}
	subjects := make([]string, len(ids))
	for i, id := range ids {
		subjects[i] = src.kind + ":" + id
	}
	held, err = s.ingest.SubjectsWithOpenCase(ctx, subjects)
	if err != nil {
		return nil, err
	}
	for _, subject := range held {
		skip[strings.TrimPrefix(subject, src.kind+":")] = true
	}
	return without(ids, skip), nil
}

func without(ids []string, skip map[string]bool) []string {
	var out []string
	for _, id := range ids {
		if !skip[id] {
			out = append(out, id)
		}
	}
	return out
}
