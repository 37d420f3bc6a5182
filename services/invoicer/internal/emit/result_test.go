package emit_test

import (
	"context"
	"testing"
	"time"

	eventsv1 "github.com/onceflow/onceflow/pkg/eventspb/onceflow/events/v1"
	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
)

// TestAuthorizedDocumentRecordsAndAnnouncesItsCAE: an authorized document
// keeps the provider's CAE (id, range, expiry), series, number, security
// code and verification link, and its notification carries the same.
func TestAuthorizedDocumentRecordsAndAnnouncesItsCAE(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("pay-cae", 1220_00, false))
	d = until(t, env, newWorker(t, env, fast(t), 5*time.Second), d.Reference, settled)
	if d.Status != fiscal.StatusAuthorized {
		t.Fatalf("status %s, want authorized", d.Status)
	}
	held := env.Sandbox.Documents()[0]
	if deref(d.ProviderCAE) != held.CAEID || deref(d.ProviderCAEFrom) != int64(held.CAEFrom) || deref(d.ProviderCAETo) != int64(held.CAETo) ||
		d.ProviderCAEExpires == nil || d.ProviderCAEExpires.Format(time.DateOnly) != held.CAEExpires ||
		deref(d.ProviderSecurityCode) != held.SecurityCode || deref(d.ProviderURL) != held.QRCode {
		t.Fatalf("recorded CAE %v %v-%v expiring %v, code %v, url %v; sandbox holds %+v", deref(d.ProviderCAE), deref(d.ProviderCAEFrom),
			deref(d.ProviderCAETo), d.ProviderCAEExpires, deref(d.ProviderSecurityCode), deref(d.ProviderURL), held)
	}
	var payload []byte
	if err := env.Pool.QueryRow(context.Background(), "SELECT payload FROM invoicer.outbox WHERE event_key = $1",
		"document:"+d.Reference+":authorized").Scan(&payload); err != nil {
		t.Fatalf("notification: %v", err)
	}
	var ev eventsv1.NotificationEvent
	if err := eventsv1.Decode([]byte(outbox.Body(payload)), &ev); err != nil {
		t.Fatal(err)
	}
	want := &eventsv1.NotificationEvent{
		Kind: eventsv1.DocumentKind_DOCUMENT_KIND_INVOICE, Status: "authorized", CaeId: held.CAEID,
		CaeRangeFrom: int64(held.CAEFrom), CaeRangeTo: int64(held.CAETo), CaeExpires: held.CAEExpires,
		SecurityCode: held.SecurityCode, VerifyUrl: held.QRCode, IssueDate: held.IssueDate, Series: held.Series,
		Number: int64(held.Number), AmountMinor: 1220_00, Currency: "UYU", PaymentRef: "pay-cae", SourceRef: "pay-cae",
	}
	got := &ev
	if got.Kind != want.Kind || got.Status != want.Status || got.CaeId != want.CaeId || got.CaeRangeFrom != want.CaeRangeFrom ||
		got.CaeRangeTo != want.CaeRangeTo || got.CaeExpires != want.CaeExpires || got.SecurityCode != want.SecurityCode ||
		got.VerifyUrl != want.VerifyUrl || got.IssueDate != want.IssueDate || got.Series != want.Series || got.Number != want.Number ||
		got.AmountMinor != want.AmountMinor || got.Currency != want.Currency || got.PaymentRef != want.PaymentRef || got.SourceRef != want.SourceRef {
		t.Fatalf("notification\n got %v\nwant %v", got, want)
	}
}
