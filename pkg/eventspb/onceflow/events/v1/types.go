package eventsv1

import (
	"bytes"
	"encoding/base64"
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

// Marshal renders m in its protobuf wire form, as producers store it in
// their outbox (outbox.Message).
func Marshal(m proto.Message) ([]byte, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", m, err)
	}
	return b, nil
}

// Encode renders m as the body sent on SQS: its protobuf wire form in
// standard base64 (an SQS body must be text). It is about 60 % of the
// protojson of earlier versions, which Decode still reads.
func Encode(m proto.Message) ([]byte, error) {
	b, err := Marshal(m)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.AppendEncode(nil, b), nil
}

// Decode parses a body into m, ignoring fields it does not know so
// producers can add fields before consumers upgrade. A body whose first
// character other than white space is '{' is protojson, as earlier
// versions sent and as people write by hand; any other is Encode's base64
// (whose alphabet has no '{').
func Decode(body []byte, m proto.Message) error {
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) == 0 {
		return fmt.Errorf("decode %T: empty body", m)
	}
	if t[0] == '{' {
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, m); err != nil {
			return fmt.Errorf("decode %T: %w", m, err)
		}
		return nil
	}
	b, err := base64.StdEncoding.AppendDecode(nil, body)
	if err != nil {
		return fmt.Errorf("decode %T: not protojson and not base64: %w", m, err)
	}
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, m); err != nil {
		return fmt.Errorf("decode %T: %w", m, err)
	}
	return nil
}
