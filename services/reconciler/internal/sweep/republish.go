package sweep

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// maxFailuresInARow is how many sends may fail one after the other before
// the run ends: beyond a few refused events, the queue itself is failing.
const maxFailuresInARow = 10

// unreachable reports whether err says the queue, not the message, is the
// problem: it does not exist or we may not send to it.
func unreachable(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	code := apiErr.ErrorCode()
	return strings.Contains(code, "NonExistentQueue") || strings.Contains(code, "QueueDoesNotExist") ||
		strings.Contains(code, "AccessDenied")
}

// republish sends the outbox event of source id to the billing queue again,
// or counts it as a missing event when ingest never wrote one. A send SQS
// refuses opens (or refreshes) its KindRepublishFailed finding and is no
// error: the run goes on. A queue that does not exist or refuses us, or
// maxFailuresInARow failed sends, end the run instead with an error (the
// next run starts from the positions saved), as do the database's and
// ctx's. The outcome says what happened: outcomeSent, outcomeNoEvent or
// outcomeSendFailed.
func (r *run) republish(ctx context.Context, src source, id string) (outcome string, err error) {
	key := src.eventKey(id)
	log := r.log.With(zap.String("source_kind", src.kind), zap.String("source_ref", id), zap.String("event_key", key))
	ev, err := r.ingest.Event(ctx, key)
	if errkind.Is(err, errkind.NotFound) {
		// Counted, logged and alerted on (OnceflowMissingEvents): ingest
		// recorded the payment as paid without its event, which only a
		// person can explain.
		r.res.MissingEvents++
		r.metrics.missingEvents.Inc()
		log.Warn("document missing and no outbox event to send again")
		return outcomeNoEvent, nil
	}
	if err != nil {
		return "", err
	}
	if _, err := r.sender.SendMessage(ctx, Message(r.cfg.QueueURL, ev, r.cfg.Signer)); err != nil {
		r.failures++
		if ctx.Err() != nil || unreachable(err) || r.failures >= maxFailuresInARow {
			return "", fmt.Errorf("send %s: %w", key, err)
		}
		r.res.Failed++
		r.metrics.failed.Inc()
		log.Warn("document missing, and sending its event again failed", zap.Error(err))
		return outcomeSendFailed, r.own.SeeFinding(ctx, store.Finding{Kind: KindRepublishFailed, Reference: key, Detail: clip(err.Error())})
	}
	r.failures = 0
	r.res.Republished++
	r.metrics.republished.Inc()
	log.Info("document missing, event sent again", zap.String("type", ev.EventType))
	return outcomeSent, nil
}

// retryFailed takes up the open KindRepublishFailed findings, at most
// MaxPerRun: each whose document now exists, or whose event is now sent,
// is closed; one SQS refuses again stays open, seen once more.
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

// retry reports whether source id's failed send is settled: its document
// exists, or its event was sent now.
func (r *run) retry(ctx context.Context, src source, id string) (bool, error) {
	missing, err := r.missing(ctx, src, []string{id})
	if err != nil || len(missing) == 0 {
		return err == nil, err
	}
	outcome, err := r.republish(ctx, src, id)
	if err != nil {
		return false, err
	}
	return outcome == outcomeSent, r.openMissing(ctx, src, id, outcome)
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
