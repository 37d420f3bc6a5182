package webhook

import (
	"errors"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// StripeIdentifier keys a Stripe event on its id (event:<evt id>), never a
// delivery, and names the object the apply worker re-fetches: the
// PaymentIntent of a payment_intent.* event, of a charge.* event (the
// charge's payment_intent) and of a charge.dispute.* event (the dispute's);
// the Refund of a refund.* event. A thin event names its object in
// related_object. Other events are kept under their own type, which the
// worker does not apply.
func StripeIdentifier(_ http.Header, body []byte) (Receipt, error) {
	if !gjson.ValidBytes(body) || !gjson.ParseBytes(body).IsObject() {
		return Receipt{}, errors.New("body is not a JSON object")
	}
	f := gjson.GetManyBytes(body, "id", "type", "data.object.object", "data.object.id", "data.object.payment_intent",
		"related_object.type", "related_object.id")
	id, typ := stringValue(f[0]), stringValue(f[1])
	if id == "" || len(id) > maxIDLength || !storable(id) || typ == "" || !storable(typ) {
		return Receipt{}, errors.New("body lacks the event's id or type (or one is too long)")
	}
	rec := Receipt{DedupeKey: "event:" + id, EventID: id, EventType: clip(typ, maxTypeLength)}
	object, objectID, pi := stringValue(f[2]), stringValue(f[3]), stringValue(f[4])
	if object == "" {
		object, objectID = stringValue(f[5]), stringValue(f[6])
	}
	switch {
	case object == "payment_intent":
		rec.EventType, rec.EventID = "payment", objectID
	case (object == "charge" || object == "dispute") && pi != "":
		rec.EventType, rec.EventID = "payment", pi
	case object == "refund":
		rec.EventType, rec.EventID = "refund", objectID
	default:
		return rec, nil
	}
	if rec.EventID == "" || len(rec.EventID) > maxIDLength || !storable(rec.EventID) || strings.ContainsAny(rec.EventID, "/?#") {
		return Receipt{}, errors.New("the event's object id is missing or not an id")
	}
	return rec, nil
}
