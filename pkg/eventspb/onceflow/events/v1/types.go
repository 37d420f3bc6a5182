package eventsv1

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Event types, carried in the SQS "type" attribute and the outbox's
// event_type column; the relay routes on them.
const (
	TypeBillingDocumentRequested = "billing.document_requested"
	TypeProviderDocumentUpdated  = "provider.document_updated"
	TypeNotificationDocument     = "notification.document"
)

// Encode renders m as the protojson body sent on SQS.
func Encode(m proto.Message) ([]byte, error) {
	b, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	return b, nil
}

// Decode parses a protojson body into m, ignoring fields it does not know so
// producers can add fields before consumers upgrade.
func Decode(body []byte, m proto.Message) error {
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, m); err != nil {
		return fmt.Errorf("decode %T: %w", m, err)
	}
	return nil
}
