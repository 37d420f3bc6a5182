package webhook

import (
	"strings"
	"testing"
)

// Stripe events are keyed on the event id and name the object to fetch,
// snapshot or thin; an event about no payment or refund is kept as its own
// type; one without an id, or with an object id that is no id, is refused.
func TestStripeIdentifier(t *testing.T) {
	for _, tc := range []struct {
		body, typ, id string
	}{
		{`{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"object":"payment_intent","id":"pi_1"}}}`, "payment", "pi_1"},
		{`{"id":"evt_2","type":"charge.succeeded","data":{"object":{"object":"charge","id":"ch_1","payment_intent":"pi_1"}}}`, "payment", "pi_1"},
		{`{"id":"evt_3","type":"charge.dispute.created","data":{"object":{"object":"dispute","id":"dp_1","payment_intent":"pi_1"}}}`, "payment", "pi_1"},
		{`{"id":"evt_4","type":"refund.updated","data":{"object":{"object":"refund","id":"re_1"}}}`, "refund", "re_1"},
		{`{"id":"evt_5","object":"v2.core.event","type":"v1.payment_intent.succeeded","related_object":{"type":"payment_intent","id":"pi_2"}}`, "payment", "pi_2"},
		{`{"id":"evt_6","type":"customer.created","data":{"object":{"object":"customer","id":"cus_1"}}}`, "customer.created", "evt_6"},
	} {
		r, err := StripeIdentifier(nil, []byte(tc.body))
		if err != nil || r.EventType != tc.typ || r.EventID != tc.id || !strings.HasPrefix(r.DedupeKey, "event:evt_") {
			t.Errorf("%s: %+v (%v), want %s %s keyed on the event", tc.body, r, err, tc.typ, tc.id)
		}
	}
	for _, bad := range []string{`[]`, `{"type":"payment_intent.succeeded"}`, `{"id":"evt_7"}`,
		`{"id":"evt_8","type":"payment_intent.succeeded","data":{"object":{"object":"payment_intent","id":"../x"}}}`,
		`{"id":"evt_9","type":"payment_intent.succeeded","data":{"object":{"object":"payment_intent"}}}`} {
		if r, err := StripeIdentifier(nil, []byte(bad)); err == nil {
			t.Errorf("%s: accepted as %+v", bad, r)
		}
	}
}
