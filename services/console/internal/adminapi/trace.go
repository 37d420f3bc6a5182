package adminapi

import (
	"context"
	"net/url"
	"sort"
	"time"
)

// Event is one hop of a trace's timeline. Detail never holds a body,
// a payload or personal data.
type Event struct {
	At      time.Time
	Service string
	What    string
	Detail  string
	Outcome string
	TraceID string
}

// Trace is everything the services hold about the money one identifier
// names, as a timeline; Customers are the customer ids personal data can
// be revealed for.
type Trace struct {
	Query     string
	Events    []Event
	Customers []string
	TraceIDs  []string
	Errors    map[string]string
}

type ingestTrace struct {
	Orders []struct {
		ID              string    `json:"id"`
		MerchantOrderID string    `json:"merchant_order_id"`
		CustomerID      string    `json:"customer_id"`
		AmountMinor     int64     `json:"amount_minor"`
		Currency        string    `json:"currency"`
		CreatedAt       time.Time `json:"created_at"`
	} `json:"orders"`
	Payments []struct {
		ID          string     `json:"id"`
		Status      string     `json:"status"`
		AmountMinor int64      `json:"amount_minor"`
		Currency    string     `json:"currency"`
		PaidAt      *time.Time `json:"paid_at"`
		CreatedAt   time.Time  `json:"created_at"`
		UpdatedAt   time.Time  `json:"updated_at"`
	} `json:"payments"`
	Refunds []struct {
		ID          string    `json:"id"`
		PaymentID   string    `json:"payment_id"`
		Status      string    `json:"status"`
		AmountMinor int64     `json:"amount_minor"`
		Currency    string    `json:"currency"`
		CreatedAt   time.Time `json:"created_at"`
		UpdatedAt   time.Time `json:"updated_at"`
	} `json:"refunds"`
	Receipts []struct {
		ID          int64      `json:"id"`
		Source      string     `json:"source"`
		EventID     string     `json:"event_id"`
		EventType   string     `json:"event_type"`
		Signature   string     `json:"signature"`
		Status      string     `json:"status"`
		Attempts    int32      `json:"attempts"`
		TraceID     string     `json:"trace_id"`
		ReceivedAt  time.Time  `json:"received_at"`
		ProcessedAt *time.Time `json:"processed_at"`
	} `json:"receipts"`
	Outbox  []outboxRow `json:"outbox"`
	Fetches []struct {
		PSP       string    `json:"psp"`
		Operation string    `json:"operation"`
		ObjectID  string    `json:"object_id"`
		Outcome   string    `json:"outcome"`
		LatencyMS int64     `json:"latency_ms"`
		At        time.Time `json:"at"`
	} `json:"psp_fetches"`
}

type outboxRow struct {
	ID           int64      `json:"id"`
	EventKey     string     `json:"event_key"`
	EventType    string     `json:"event_type"`
	TraceID      string     `json:"trace_id"`
	CreatedAt    time.Time  `json:"created_at"`
	Attempts     int32      `json:"attempts"`
	PublishedAt  *time.Time `json:"published_at"`
	ParkedAt     *time.Time `json:"parked_at"`
	ParkedReason *string    `json:"parked_reason"`
}

type invoicerTrace struct {
	Documents []struct {
		Document struct {
			ID          int64     `json:"id"`
			SourceKind  string    `json:"source_kind"`
			SourceRef   string    `json:"source_ref"`
			Kind        string    `json:"kind"`
			Reference   string    `json:"reference"`
			CFEType     int32     `json:"cfe_type"`
			Status      string    `json:"status"`
			Series      *string   `json:"series"`
			Number      *int64    `json:"number"`
			AmountMinor int64     `json:"amount_minor"`
			Currency    string    `json:"currency"`
			DGIPolls    int32     `json:"dgi_polls"`
			CreatedAt   time.Time `json:"created_at"`
			UpdatedAt   time.Time `json:"updated_at"`
		} `json:"document"`
		Attempts []struct {
			Operation string    `json:"operation"`
			Outcome   string    `json:"outcome"`
			Error     *string   `json:"error"`
			LatencyMS int32     `json:"latency_ms"`
			At        time.Time `json:"at"`
		} `json:"attempts"`
		Resolutions []struct {
			Action     string    `json:"action"`
			Actor      string    `json:"actor"`
			Reason     string    `json:"reason"`
			FromStatus string    `json:"from_status"`
			ToStatus   string    `json:"to_status"`
			At         time.Time `json:"at"`
		} `json:"resolutions"`
		Notifications []outboxRow `json:"notifications"`
	} `json:"documents"`
}

// Trace asks ingest and the invoicer about q, then asks each about the
// payments and refunds the other found (a document reference names a
// payment only the invoicer knows; an order id names one only ingest
// knows), and merges everything into one timeline.
func (c *Client) Trace(ctx context.Context, q string) *Trace {
	t := &Trace{Query: q, Errors: map[string]string{}}
	var in ingestTrace
	var inv invoicerTrace
	if err := c.Get(ctx, "ingest", "/admin/trace", url.Values{"q": {q}}, &in); err != nil {
		t.Errors["ingest"] = err.Error()
	}
	if err := c.Get(ctx, "invoicer", "/admin/trace", url.Values{"q": {q}}, &inv); err != nil {
		t.Errors["invoicer"] = err.Error()
	}
	if len(in.Payments) == 0 && len(inv.Documents) > 0 {
		src := inv.Documents[0].Document.SourceRef
		if err := c.Get(ctx, "ingest", "/admin/trace", url.Values{"q": {src}}, &in); err != nil {
			t.Errors["ingest"] = err.Error()
		}
	}
	if len(inv.Documents) == 0 {
		for _, p := range in.Payments {
			var more invoicerTrace
			if err := c.Get(ctx, "invoicer", "/admin/trace", url.Values{"q": {p.ID}}, &more); err != nil {
				t.Errors["invoicer"] = err.Error()
			}
			inv.Documents = append(inv.Documents, more.Documents...)
		}
	}
	t.addIngest(in)
	t.addInvoicer(inv)
	sort.SliceStable(t.Events, func(i, j int) bool { return t.Events[i].At.Before(t.Events[j].At) })
	return t
}
