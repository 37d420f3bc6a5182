package outbox

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQS message attribute names every published event carries; consumers
// route on type and trace on traceparent.
const (
	AttrType        = "type"
	AttrEventKey    = "event_key"
	AttrTraceparent = "traceparent"
)

// Attributes returns the SQS message attributes of an event: its type, event
// key, and W3C traceparent when there is one. The body's form needs no
// attribute: Body says it, and consumers decode it with eventsv1.Decode. The relay and the
// reconciler's re-publication both use it, so a message looks the same
// whichever path sent it.
func Attributes(eventType, eventKey, traceparent string) map[string]types.MessageAttributeValue {
	a := map[string]types.MessageAttributeValue{
		AttrType:     stringAttr(eventType),
		AttrEventKey: stringAttr(eventKey),
	}
	if traceparent != "" {
		a[AttrTraceparent] = stringAttr(traceparent)
	}
	return a
}

func stringAttr(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}
