package emit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// job is one claimed document on its way through a round.
type job struct {
	ctx    context.Context // carries the document's span
	span   trace.Span
	d      store.Document
	calls  calls
	doc    *fiscal.Document // to send; nil once the result is decided
	marked bool             // the send marker is committed
	res    result
}

// sendAll marks every job that has a document to send as possibly in
// flight, in one commit, then sends the marked ones, Config.Sends at once.
// Should the worker die after the marker, the next attempt treats the send
// as unknown, never as unsent. Marking renews the claims, and each send is
// preceded by the same lazy lease check as the look-ups. Once shutdown has
// begun nothing more is sent: a marked document left unsent is saved with
// its marker undone.
func (e *Emitter) sendAll(ctx, inHand context.Context, jobs []*job, token uuid.UUID) {
	jobs = slices.DeleteFunc(slices.Clone(jobs), func(j *job) bool { return j.doc == nil })
	if len(jobs) == 0 {
		return
	}
	marked := e.cfg.now()
	if ctx.Err() == nil {
		e.mark(inHand, jobs, token)
	}
	var sends errgroup.Group
	sends.SetLimit(max(e.cfg.Sends, 1))
	for _, j := range jobs {
		sends.Go(func() error {
			e.sendMarked(ctx, inHand, j, token, marked)
			return nil
		})
	}
	_ = sends.Wait() // no send returns an error: each result is j.res
}

// sendMarked sends j's document if j was marked, shutdown has not begun
// and its claim, marked at marked, still holds.
func (e *Emitter) sendMarked(ctx, inHand context.Context, j *job, token uuid.UUID, marked time.Time) {
	switch {
	case ctx.Err() != nil:
		j.res = e.retry(j.d, "interrupted", errors.New("shutdown began before the send"))
	case !j.marked:
		return
	case !e.leased(inHand, j.d, token, marked):
		j.res = e.retry(j.d, "claim_lost", errors.New("claim lost before sending"))
	default:
		j.res = e.send(j.ctx, j.d, *j.doc, &j.calls)
	}
	j.doc = nil
}

// mark commits the send markers of jobs with the calls they made so far. A
// job its claim or status no longer allows is not marked and gets a retry.
// Should the shared commit fail, each job is marked alone, so one bad row
// costs only its own send.
func (e *Emitter) mark(ctx context.Context, jobs []*job, token uuid.UUID) {
	err := e.markTx(ctx, jobs, token)
	if err == nil {
		return
	}
	if len(jobs) > 1 {
		for _, j := range jobs {
			e.mark(ctx, []*job{j}, token)
		}
		return
	}
	jobs[0].res, jobs[0].doc = e.retry(jobs[0].d, "mark_failed", fmt.Errorf("mark sending: %w", err)), nil
}

func (e *Emitter) markTx(ctx context.Context, jobs []*job, token uuid.UUID) error {
	claimed := make([]store.Claimed, len(jobs))
	for i, j := range jobs {
		claimed[i] = store.Claimed{ID: j.d.ID, Status: j.d.Status}
	}
	var ids []int64
	err := e.store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if ids, err = tx.MarkSending(ctx, token, e.cfg.Lease, claimed); err != nil {
			return err
		}
		return writeCalls(ctx, tx, jobs)
	})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		j.calls.done()
		if j.marked = slices.Contains(ids, j.d.ID); !j.marked {
			j.res, j.doc = e.retry(j.d, "claim_lost", errors.New("claim lost before sending")), nil
		}
	}
	return nil
}

// saveAll saves every job's result, with its notification and the calls it
// holds, in one commit; each result is written only if the claim token and
// the claimed status still hold, and a late one is refused and logged.
// Should the shared commit fail, each job is saved alone; a job whose own
// save fails has its calls recorded alone.
func (e *Emitter) saveAll(ctx context.Context, jobs []*job, token uuid.UUID) {
	if len(jobs) > 1 {
		if fenced, err := e.saveTx(ctx, jobs, token); err == nil {
			for i, j := range jobs {
				e.finish(j, fenced[i])
			}
			return
		}
	}
	for _, j := range jobs {
		fenced, err := e.saveTx(ctx, []*job{j}, token)
		if err != nil {
			e.writeAlone(ctx, j)
			e.finish(j, err)
			continue
		}
		e.finish(j, fenced[0])
	}
}

// saveTx saves jobs' results in one transaction, all of them in one
// statement; fenced[i] is store.ErrFenced where the i-th result was refused.
func (e *Emitter) saveTx(ctx context.Context, jobs []*job, token uuid.UUID) ([]error, error) {
	fenced := make([]error, len(jobs))
	return fenced, notify.Commit(ctx, e.store, e.cfg.Wake, func(tx *store.Tx) error {
		if err := writeCalls(ctx, tx, jobs); err != nil {
			return err
		}
		results := make([]store.Result, len(jobs))
		for i, j := range jobs {
			results[i] = toSave(j.d, token, j.res)
		}
		f, err := tx.SaveResults(ctx, results)
		copy(fenced, f)
		if err != nil {
			return err
		}
		if err := e.openCases(ctx, tx, jobs, results, fenced); err != nil {
			return err
		}
		msgs, err := notifications(jobs, results, fenced)
		if err != nil {
			return err
		}
		_, err = tx.InsertOutbox(ctx, notify.Table, msgs)
		return err
	})
}

// notifications are the announcements of the saved results that changed
// their document's status.
func notifications(jobs []*job, saved []store.Result, fenced []error) ([]outbox.Message, error) {
	var msgs []outbox.Message
	for i, j := range jobs {
		if fenced[i] != nil || j.res.status == j.d.Status {
			continue
		}
		p := saved[i]
		provider := notify.Recorded(j.d)
		if j.res.held != nil {
			provider = *j.res.held
		}
		m, ok, err := notify.Message(j.d, notify.Change{Status: j.res.status, Series: deref(p.ProviderSeries), Number: deref(p.ProviderNumber),
			Reason: j.res.attention, Provider: provider})
		if err != nil {
			return nil, err
		}
		if ok {
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}

// finish counts and logs j's outcome and ends its span; err says why its
// result was not saved.
func (e *Emitter) finish(j *job, err error) {
	j.calls.done()
	r := j.res
	j.span.SetAttributes(attribute.String("onceflow.outcome", r.outcome))
	j.span.End()
	e.outcomes.WithLabelValues(r.outcome).Inc()
	log := e.log.With(zap.Int64("document", j.d.ID), zap.String("reference", j.d.Reference), zap.String("outcome", r.outcome), zap.String("status", string(r.status)))
	switch {
	case errors.Is(err, store.ErrFenced):
		e.fenced.Inc()
		log.Warn("emission result refused: the lease was lost or the status changed meanwhile")
	case err != nil:
		log.Error("save emission result", zap.Error(err))
	default:
		e.cfg.Valid.Observe(j.d, r.status)
		log.Info("emission attempt", zap.String("last_error", r.lastError))
	}
}
