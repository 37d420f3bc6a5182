package consumer

import (
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
	fiscal.StatusPendingDGI: {fiscal.StatusAuthorized, fiscal.StatusRejected, fiscal.StatusVoided},
	fiscal.StatusIssued:     {fiscal.StatusAuthorized, fiscal.StatusRejected, fiscal.StatusVoided},
	fiscal.StatusAuthorized: {fiscal.StatusVoided},
}

// Provider adopts the e-invoicing provider's news about documents.
type Provider struct {
	store    *store.Store
	statuses map[string]fiscal.Status
	log      *zap.Logger
	wake     func()
}

// NewProvider returns the provider-event handler over the documents of st;
// statuses maps the provider's status codes (CFEStatus) to fiscal states,
// and wake (when set) tells the relay a notification was committed.
func NewProvider(st *store.Store, statuses map[string]fiscal.Status, log *zap.Logger, wake func()) *Provider {
	return &Provider{store: st, statuses: statuses, log: log, wake: wake}
}

// Handle adopts a provider event. A document still pending or unknown here
// is made due, so the emission loop looks it up and adopts every provider
// field; one pending at DGI (or issued by the daily-summary rule) moves
// forward with its notification. Events about unknown references, unmapped
// codes or that would move a document backwards are dropped. It is a
// Handler.
func (p *Provider) Handle(ctx context.Context, body string) (string, error) {
	var ev eventsv1.ProviderEvent
	if err := eventsv1.Decode([]byte(body), &ev); err != nil {
		return "poison", fmt.Errorf("%w: %v", errPoison, err)
	}
	if !fiscal.ValidReference(ev.Reference) || ev.ProviderStatus == "" {
		return "poison", fmt.Errorf("%w: event %s lacks a reference or status", errPoison, ev.EventId)
	}
	log := p.log.With(zap.String("event_id", ev.EventId), zap.String("reference", ev.Reference), zap.String("provider_status", ev.ProviderStatus))
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

// adopt applies to on d if it moves d forward.
func (p *Provider) adopt(ctx context.Context, d store.Document, to fiscal.Status, code string) (string, error) {
	from := d.Status
	if from == fiscal.StatusPending || from == fiscal.StatusUnknown {
		_, err := p.store.MakeDue(ctx, d.ID, d.Status)
		return "made_due", err
	}
	if !slices.Contains(forward[from], to) {
		return "stale", nil
	}
	outcome := "adopted"
	err := notify.Commit(ctx, p.store, p.wake, func(tx *store.Tx) error {
		adopted, err := tx.AdoptStatus(ctx, store.Adoption{ID: d.ID, FromStatus: d.Status, Status: to, ProviderStatus: &code})
		if err != nil || !adopted {
			outcome = "stale" // changed meanwhile; the next event or look-up decides
			return err
		}
		return notify.Insert(ctx, tx, d, notify.Change{Status: to, Series: deref(d.ProviderSeries), Number: deref(d.ProviderNumber)})
	})
	return outcome, err
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
