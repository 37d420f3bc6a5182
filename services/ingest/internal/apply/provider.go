package apply

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/services/ingest/internal/store"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// prepareProviderEvent's write forwards a fiscal provider's news about a
// document to the invoicer through the outbox. Nothing is re-fetched: the
// invoicer adopts the state forward-only and still polls the provider
// itself.
func prepareProviderEvent(ctx context.Context, r store.Receipt) (write, error) {
	pe, err := webhook.ParseProviderEvent(r.Body)
	if err != nil {
		return nil, errRejected{reason: err.Error()}
	}
	occurred := pe.CreatedAt
	if occurred.IsZero() {
		occurred = r.ReceivedAt
	}
	ev := &eventsv1.ProviderEvent{
		EventId: r.EventID, Provider: r.Scope, Reference: pe.Data.Reference,
		ProviderStatus: pe.Data.Status, OccurredAt: timestamppb.New(occurred),
	}
	wire, err := eventsv1.Marshal(ev)
	if err != nil {
		return nil, err
	}
	msg := outbox.Message{EventKey: "provider:" + r.Scope + ":" + r.EventID, EventType: eventsv1.TypeProviderDocumentUpdated, Payload: wire}
	return func(_ *store.Tx, r *records) error {
		r.event(ctx, msg)
		return nil
	}, nil
}
