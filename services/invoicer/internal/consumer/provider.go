package consumer

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/notify"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// forward lists, per current status, the provider states a document may
// move to on a provider event. Anything else is stale or out of order and
// ignored; needs_attention is the operator's.
var forward = map[fiscal.Status][]fiscal.Status{
	fiscal.StatusPendingDGI: {fiscal.StatusAuthorized, fiscal.StatusObserved, fiscal.StatusRejected, fiscal.StatusVoided},
	fiscal.StatusIssued:     {fiscal.StatusAuthorized, fiscal.StatusObserved, fiscal.StatusRejected, fiscal.StatusVoided},
	fiscal.StatusAuthorized: {fiscal.StatusVoided},
	fiscal.StatusObserved:   {fiscal.StatusVoided},
}

// Holder is the fiscal provider that holds the invoicer's documents, the one
// it sends every document to (PROVIDER).
type Holder struct {
	// Name is the provider as its events name it (the ingest webhook
	// source's name); events from any other source are dropped.
	Name string
	// Lookup returns what the provider holds under a reference; an event's
	// status is applied only once a look-up confirms it. Nil for a provider
	// that cannot be looked up (blind mode), whose events are applied as
	// they come: they are the only news of its documents.
	Lookup func(ctx context.Context, reference string) ([]fiscal.Held, error)
}

// Provider adopts the e-invoicing provider's news about documents.
type Provider struct {
	store    *store.Store
	statuses map[string]fiscal.Status
	holder   Holder
	log      *zap.Logger
	wake     func()
	valid    *notify.Valid
}

// NewProvider returns the provider-event handler over the documents of st;
// statuses maps the provider's status codes (CFEStatus) to fiscal states,
// holder is the provider the documents are sent to, and wake (when set)
// tells the relay a notification was committed.
func NewProvider(st *store.Store, statuses map[string]fiscal.Status, holder Holder, log *zap.Logger, wake func()) *Provider {
	return &Provider{store: st, statuses: statuses, holder: holder, log: log, wake: wake}
}

// WithValid makes p measure the documents its events make valid, and
// returns p.
func (p *Provider) WithValid(v *notify.Valid) *Provider {
	p.valid = v
	return p
}

// Handle adopts a provider event from the provider holding the documents.
// A document still pending or unknown here is made due, so the emission
// loop looks it up and adopts every provider field; one pending at DGI (or
// issued by the daily-summary rule) moves forward with its notification,
// once a look-up at the provider confirms the new status and that the
// document it holds is ours. Events from another provider, about unknown
// references, with unmapped codes, that would move a document backwards or
// that a look-up does not confirm are dropped. A failed look-up is an error,
// so the event is received again. It is a Handler.
func (p *Provider) Handle(ctx context.Context, body string) (string, error) {
	var ev eventsv1.ProviderEvent
	if err := eventsv1.Decode([]byte(body), &ev); err != nil {
		return "poison", fmt.Errorf("%w: %v", errPoison, err)
	}
	if !fiscal.ValidReference(ev.Reference) || ev.ProviderStatus == "" {
		return "poison", fmt.Errorf("%w: event %s lacks a reference or status", errPoison, ev.EventId)
	}
	log := p.log.With(zap.String("event_id", ev.EventId), zap.String("provider", ev.Provider), zap.String("reference", ev.Reference), zap.String("provider_status", ev.ProviderStatus))
	if ev.Provider != p.holder.Name {
		log.Warn("provider event from a provider that holds no document of ours", zap.String("holder", p.holder.Name))
		return "foreign_provider", nil
	}
	d, err := p.store.DocumentByReference(ctx, ev.Reference)
	if errkind.Is(err, errkind.NotFound) {
		log.Info("provider event for a reference not ours")
		return "unknown_reference", nil
	}
	if err != nil {
		return "error", fmt.Errorf("provider event %s: %w", ev.EventId, err)
	}
	to, ok := p.statuses[ev.ProviderStatus]
	if !ok {
		log.Warn("provider event with an unmapped status code")
		return "unmapped", nil
	}
	outcome, err := p.adopt(ctx, d, to, ev.ProviderStatus)
	if err != nil {
		return "error", fmt.Errorf("provider event %s: %w", ev.EventId, err)
	}
	log.Info("provider event", zap.Int64("document", d.ID), zap.String("from", string(d.Status)), zap.String("to", string(to)), zap.String("outcome", outcome))
	return outcome, nil
}

// adopt applies to on d if it moves d forward and the provider confirms it.
func (p *Provider) adopt(ctx context.Context, d store.Document, to fiscal.Status, code string) (string, error) {
	from := d.Status
	if from == fiscal.StatusPending || from == fiscal.StatusUnknown {
		_, err := p.store.MakeDue(ctx, d.ID, d.Status)
		return "made_due", err
	}
	if !slices.Contains(forward[from], to) {
		return "stale", nil
	}
	a := store.Adoption{ID: d.ID, FromStatus: d.Status, Status: to, ProviderStatus: &code}
	provider := notify.Recorded(d)
	if p.holder.Lookup != nil {
		held, ok, err := p.confirm(ctx, d, to)
		if err != nil || !ok {
			return "unconfirmed", err
		}
		a = adoption(d, held)
		provider = held
	}
	outcome := "adopted"
	err := notify.Commit(ctx, p.store, p.wake, func(tx *store.Tx) error {
		adopted, err := tx.AdoptStatus(ctx, a)
		if err != nil || !adopted {
			outcome = "stale" // changed meanwhile; the next event or look-up decides
			return err
		}
		if to == fiscal.StatusRejected {
			if _, err := tx.OpenCase(ctx, store.RejectedCase(d, deref(a.ProviderStatus))); err != nil {
				return err
			}
		}
		return notify.Insert(ctx, tx, d, notify.Change{Status: to,
			Series: deref(cmp.Or(a.ProviderSeries, d.ProviderSeries)), Number: deref(cmp.Or(a.ProviderNumber, d.ProviderNumber)),
			Provider: provider})
	})
	if err == nil && outcome == "adopted" {
		p.valid.Observe(d, a.Status)
	}
	return outcome, err
}

// confirm looks d up at the provider and reports whether it holds exactly
// d (fiscal.Classify, as the emission loop judges a look-up) in status to.
// An error means the look-up failed.
func (p *Provider) confirm(ctx context.Context, d store.Document, to fiscal.Status) (fiscal.Held, bool, error) {
	held, err := p.holder.Lookup(ctx, d.Reference)
	if err != nil {
		return fiscal.Held{}, false, fmt.Errorf("look up %s: %w", d.Reference, err)
	}
	doc := fiscal.Document{Reference: d.Reference, Type: d.CFEType, TotalMinor: d.AmountMinor,
		Addendum: fiscal.Addendum(d.SourceKind, d.SourceRef, d.Kind)}
	verdict, match, reason := fiscal.Classify(doc, held)
	if verdict != fiscal.VerdictAdopt || match.Status != to {
		p.log.Warn("provider event not confirmed by a look-up", zap.Int64("document", d.ID), zap.String("reference", d.Reference),
			zap.String("event_status", string(to)), zap.String("held_status", string(match.Status)), zap.String("verdict", verdict.String()), zap.String("reason", reason))
		return fiscal.Held{}, false, nil
	}
	return match, true, nil
}

// adoption moves d to the state h, the provider's copy, is in, with its
// fields.
func adoption(d store.Document, h fiscal.Held) store.Adoption {
	a := store.Adoption{ID: d.ID, FromStatus: d.Status, Status: h.Status, ProviderStatus: &h.ProviderStatus,
		ProviderSeries: &h.Series, ProviderNumber: &h.Number, ProviderCAE: &h.CAEID,
		ProviderSecurityCode: &h.SecurityCode, ProviderURL: &h.VerifyURL}
	a.ProviderCAEFrom, a.ProviderCAETo, a.ProviderCAEExpires = store.CAERange(h)
	if !h.IssueDate.IsZero() {
		a.IssueDate = &h.IssueDate
	}
	return a
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
