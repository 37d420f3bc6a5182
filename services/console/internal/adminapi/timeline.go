package adminapi

import (
	"fmt"
	"slices"

	"github.com/onceflow/onceflow/pkg/money"
)

func (t *Trace) add(e Event) {
	t.Events = append(t.Events, e)
	if e.TraceID != "" && !slices.Contains(t.TraceIDs, e.TraceID) {
		t.TraceIDs = append(t.TraceIDs, e.TraceID)
	}
}

// addIngest adds ingest's hops: the order, each receipt with its
// signature verdict and its application, every call to the PSP (re-fetch
// or search by order) with its latency and outcome, the payment and
// refunds, and each outbox row with its publication.
func (t *Trace) addIngest(in ingestTrace) {
	for _, o := range in.Orders {
		t.add(Event{At: o.CreatedAt, Service: "ingest", What: "order recorded",
			Detail: fmt.Sprintf("order %s (merchant order %s), %s %s", o.ID, o.MerchantOrderID, amount(o.AmountMinor), o.Currency)})
		if !slices.Contains(t.Customers, o.CustomerID) {
			t.Customers = append(t.Customers, o.CustomerID)
		}
	}
	for _, r := range in.Receipts {
		t.add(Event{At: r.ReceivedAt, Service: "ingest", What: "webhook received",
			Detail:  fmt.Sprintf("receipt %d from %s, event %s %s; signature %s", r.ID, r.Source, r.EventID, r.EventType, r.Signature),
			Outcome: "stored", TraceID: r.TraceID})
		if r.ProcessedAt != nil {
			t.add(Event{At: *r.ProcessedAt, Service: "ingest", What: "re-fetched from the PSP and applied",
				Detail: fmt.Sprintf("receipt %d after %d attempt(s)", r.ID, r.Attempts), Outcome: r.Status, TraceID: r.TraceID})
		}
	}
	for _, f := range in.Fetches {
		what := map[string]string{"payment": "PSP re-fetch", "refund": "PSP re-fetch", "payments_of_order": "PSP search by order"}[f.Operation]
		t.add(Event{At: f.At, Service: "ingest", What: what,
			Detail: fmt.Sprintf("%s %s of %s, %d ms", f.PSP, f.Operation, f.ObjectID, f.LatencyMS), Outcome: f.Outcome})
	}
	for _, p := range in.Payments {
		t.add(Event{At: p.CreatedAt, Service: "ingest", What: "payment recorded",
			Detail: fmt.Sprintf("payment %s, %s %s", p.ID, amount(p.AmountMinor), p.Currency), Outcome: p.Status})
		if p.PaidAt != nil {
			t.add(Event{At: *p.PaidAt, Service: "ingest", What: "payment paid", Detail: "payment " + p.ID, Outcome: "PAID"})
		}
	}
	for _, r := range in.Refunds {
		t.add(Event{At: r.CreatedAt, Service: "ingest", What: "refund recorded",
			Detail: fmt.Sprintf("refund %s of payment %s, %s %s", r.ID, r.PaymentID, amount(r.AmountMinor), r.Currency), Outcome: r.Status})
	}
	for _, o := range in.Outbox {
		t.addOutbox("ingest", o)
	}
}

// addOutbox adds an outbox row and, once the relay published or parked
// it, that too.
func (t *Trace) addOutbox(service string, o outboxRow) {
	t.add(Event{At: o.CreatedAt, Service: service, What: "outbox row written",
		Detail: fmt.Sprintf("%s row %d, %s (%s)", service, o.ID, o.EventKey, o.EventType), TraceID: o.TraceID})
	switch {
	case o.PublishedAt != nil:
		t.add(Event{At: *o.PublishedAt, Service: "relay", What: "published to SQS",
			Detail: fmt.Sprintf("%s row %d after %d failed attempt(s)", service, o.ID, o.Attempts), Outcome: "published", TraceID: o.TraceID})
	case o.ParkedAt != nil:
		t.add(Event{At: *o.ParkedAt, Service: "relay", What: "parked",
			Detail: fmt.Sprintf("%s row %d: %s", service, o.ID, deref(o.ParkedReason)), Outcome: "parked", TraceID: o.TraceID})
	}
}

// addInvoicer adds each document, every provider call (look-ups, sends
// and DGI polls) with its latency and outcome, the resolutions and the
// notifications.
func (t *Trace) addInvoicer(inv invoicerTrace) {
	for _, d := range inv.Documents {
		doc := d.Document
		number := ""
		if doc.Series != nil && doc.Number != nil {
			number = fmt.Sprintf(", CFE %s-%d", *doc.Series, *doc.Number)
		}
		t.add(Event{At: doc.CreatedAt, Service: "invoicer", What: "document recorded",
			Detail: fmt.Sprintf("%s %d for %s %s, reference %s, type %d%s", doc.Kind, doc.ID, doc.SourceKind, doc.SourceRef, doc.Reference, doc.CFEType, number)})
		for _, a := range d.Attempts {
			what := map[string]string{"lookup": "provider look-up", "emit": "provider send", "status": "DGI poll"}[a.Operation]
			detail := fmt.Sprintf("document %d, %d ms", doc.ID, a.LatencyMS)
			if a.Error != nil {
				detail += ": " + *a.Error
			}
			t.add(Event{At: a.At, Service: "invoicer", What: what, Detail: detail, Outcome: a.Outcome})
		}
		for _, r := range d.Resolutions {
			t.add(Event{At: r.At, Service: "invoicer", What: "operator resolution",
				Detail: fmt.Sprintf("%s by %s: %s (%s → %s)", r.Action, r.Actor, r.Reason, r.FromStatus, r.ToStatus), Outcome: r.ToStatus})
		}
		t.add(Event{At: doc.UpdatedAt, Service: "invoicer", What: "document state",
			Detail: fmt.Sprintf("document %d after %d DGI poll(s)", doc.ID, doc.DGIPolls), Outcome: doc.Status})
		for _, n := range d.Notifications {
			t.addOutbox("invoicer", n)
		}
	}
}

func amount(minor int64) string { return money.FormatMinor(minor) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
