package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/services/reconciler/internal/pspaudit"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// maxFailuresInARow is how many requests to ingest may fail one after the
// other before the run ends: beyond a few, ingest itself is failing.
const maxFailuresInARow = 10

// unreachable reports whether err says ingest's admin API, not the event,
// is the problem: it refuses our token or does not serve the route.
func unreachable(err error) bool {
	var st *pspaudit.StatusError
	return errors.As(err, &st) && (st.Code == http.StatusUnauthorized || st.Code == http.StatusForbidden ||
		st.Code == http.StatusNotFound || st.Code == http.StatusMethodNotAllowed)
}

// republish asks ingest, in one request, to announce again the events of
// source ids (at most pspaudit.MaxRepublish): their outbox rows become due
// and the relay publishes them, signed with its key. It returns what became
// of each, in the order of ids: outcomeSent, outcomeNoEvent (ingest has no
// such row), outcomeParked (its row is parked: ingest's parked_outbox_row
// case holds it in front of a person) or outcomeSendFailed. A request of
// several keys that fails is made again one key at a time, so a key ingest
// cannot take holds back no other; a one-key request that fails opens (or
// refreshes) its KindRepublishFailed finding and is no error: the run goes
// on. Ingest refusing our token, or maxFailuresInARow failed requests, end
// the run instead with an error (the next run starts from the positions
// saved), as do the database's and ctx's.
func (r *run) republish(ctx context.Context, src source, ids []string) ([]string, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = src.eventKey(id)
	}
	res, err := r.announcer.Republish(ctx, keys)
	switch {
	case err == nil:
		r.failures = 0
		return r.answered(src, ids, keys, res), nil
	case ctx.Err() != nil || unreachable(err):
		return nil, fmt.Errorf("republish %d events: %w", len(keys), err)
	case len(ids) == 1:
		return r.failed(ctx, src, ids[0], keys[0], err)
	}
	outcomes := make([]string, 0, len(ids))
	for i := range ids {
		one, err := r.republish(ctx, src, ids[i:i+1])
		if err != nil {
			return nil, err
		}
		outcomes = append(outcomes, one...)
	}
	return outcomes, nil
}

// failed records that asking for source id's event (its key) failed with
// err: a KindRepublishFailed finding, or the run's end after
// maxFailuresInARow failures in a row.
func (r *run) failed(ctx context.Context, src source, id, key string, err error) ([]string, error) {
	r.failures++
	if r.failures >= maxFailuresInARow {
		return nil, fmt.Errorf("republish %s: %w", key, err)
	}
	r.res.Failed++
	r.metrics.failed.Inc()
	r.log.Warn("document missing, and asking ingest to announce its event again failed", zap.String("source_kind", src.kind),
		zap.String("source_ref", id), zap.String("event_key", key), zap.Error(err))
	return []string{outcomeSendFailed}, r.own.SeeFinding(ctx, store.Finding{Kind: KindRepublishFailed, Reference: key, Detail: clip(err.Error())})
}

// answered counts and logs what ingest did with each of keys (the event
// keys of source ids) and returns the outcomes in their order.
func (r *run) answered(src source, ids, keys []string, res pspaudit.Republished) []string {
	outcomes := make([]string, len(keys))
	for i, key := range keys {
		log := r.log.With(zap.String("source_kind", src.kind), zap.String("source_ref", ids[i]), zap.String("event_key", key))
		switch {
		case slices.Contains(res.Republished, key):
			r.res.Republished++
			r.metrics.republished.Inc()
			log.Info("document missing, ingest announces its event again")
			outcomes[i] = outcomeSent
		case slices.Contains(res.Parked, key):
			r.res.Parked++
			log.Warn("document missing and its event is parked in ingest's outbox: unpark it")
			outcomes[i] = outcomeParked
		default:
			// Counted, logged and alerted on (OnceflowMissingEvents):
			// ingest recorded the payment as paid without its event (or
			// pruned it), which only a person can explain.
			r.res.MissingEvents++
			r.metrics.missingEvents.Inc()
			log.Warn("document missing and no outbox event to announce again")
			outcomes[i] = outcomeNoEvent
		}
	}
	return outcomes
}

// retryFailed takes up the open KindRepublishFailed findings, at most
// MaxPerRun: each whose document now exists, or whose request ingest now
// took, is closed; one whose request fails again stays open, seen once more.
func (r *run) retryFailed(ctx context.Context) error {
	open, err := r.own.OpenFindings(ctx, KindRepublishFailed, r.cfg.MaxPerRun)
	if err != nil {
		return err
	}
	for _, f := range open {
		src, id, ok := r.sourceOf(f.Reference)
		if !ok {
			continue
		}
		r.retried[f.Reference] = true
		done, err := r.retry(ctx, src, id)
		if err != nil {
			return err
		}
		r.failures = 0 // a known refused event failing again says nothing of the queue
		if done {
			if err := r.own.CloseFinding(ctx, KindRepublishFailed, f.Reference); err != nil {
				return err
			}
		}
	}
	return nil
}

// retry reports whether source id's failed request is settled: its
// document exists, or ingest took the request now (whatever it answered).
func (r *run) retry(ctx context.Context, src source, id string) (bool, error) {
	missing, err := r.missing(ctx, src, []string{id})
	if err != nil || len(missing) == 0 {
		return err == nil, err
	}
	outcomes, err := r.republish(ctx, src, []string{id})
	if err != nil {
		return false, err
	}
	return outcomes[0] != outcomeSendFailed, r.openMissing(ctx, src, id, outcomes[0])
}

// sourceOf finds the source and id of an event key.
func (s *Sweeper) sourceOf(key string) (source, string, bool) {
	for _, src := range s.sources() {
		prefix, suffix, _ := strings.Cut(src.eventKey("\x00"), "\x00")
		if id, ok := strings.CutPrefix(key, prefix); ok {
			if id, ok = strings.CutSuffix(id, suffix); ok && id != "" {
				return src, id, true
			}
		}
	}
	return source{}, "", false
}

func clip(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}
