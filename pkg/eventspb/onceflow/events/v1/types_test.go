package eventsv1

import (
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func sample() *BillingEvent {
	return &BillingEvent{
		EventKey: "payment:D-4-1:paid", Kind: DocumentKind_DOCUMENT_KIND_INVOICE, SourceKind: "payment",
		SourceRef: "D-4-1", MerchantOrderId: "order-1", AmountMinor: 125000, Currency: "UYU",
		Buyer:      &Buyer{DocType: "CI", DocCountry: "UY", DocNumber: "19119365", LegalName: "Buyer"},
		Lines:      []*Line{{Description: "Credits pack", Quantity: 1, UnitMinor: 125000, AmountMinor: 125000}},
		OccurredAt: timestamppb.Now(),
	}
}

func TestEncodeIsReadBackAndSmallerThanProtojson(t *testing.T) {
	want := sample()
	body, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	var got BillingEvent
	if err := Decode(body, &got); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	if !proto.Equal(&got, want) {
		t.Fatalf("read back %v, want %v", &got, want)
	}
	js, _ := protojson.Marshal(want)
	if len(body) >= len(js) {
		t.Errorf("body %d bytes, protojson %d: want it smaller", len(body), len(js))
	}
}

func TestDecodeIgnoresFieldsItDoesNotKnow(t *testing.T) {
	want := sample()
	wire, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	wire = protowire.AppendTag(wire, 999, protowire.BytesType) // a field a later producer adds
	wire = protowire.AppendString(wire, "later")
	var got BillingEvent
	if err := Decode(base64.StdEncoding.AppendEncode(nil, wire), &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, want) {
		t.Fatalf("read %v, want %v", &got, want)
	}
}

func TestDecodeReadsProtojsonBodies(t *testing.T) {
	want := sample()
	js, err := protojson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte("\n "), js[:len(js)-1]...)
	body = append(body, []byte(`,"addedLater":"x"}`)...) // a field this version does not know
	var got BillingEvent
	if err := Decode(body, &got); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if !proto.Equal(&got, want) {
		t.Fatalf("read %v, want %v", &got, want)
	}
}

func TestDecodeRefusesWhatIsNeitherForm(t *testing.T) {
	for name, body := range map[string]string{
		"empty":         "",
		"blank":         " \n",
		"not base64":    "payment:D-4-1:paid",
		"bad protojson": `{"eventKey":`,
		"not protobuf":  "//8=", // base64 of 0xff 0xff: no valid field
	} {
		var ev BillingEvent
		err := Decode([]byte(body), &ev)
		if err == nil {
			t.Errorf("%s: Decode(%q) succeeded, want an error", name, body)
			continue
		}
		if !strings.Contains(err.Error(), "BillingEvent") {
			t.Errorf("%s: error %q does not name the message", name, err)
		}
	}
}
