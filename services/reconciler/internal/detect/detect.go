// Package detect looks for work that is stuck where no automatic path will
// free it: parked outbox rows and receipts, receipts pending too long, documents
// in needs_attention too long, claims that expired with nobody taking them
// over, and relay leader leases nobody renewed. Each becomes a finding.
package detect

import (
	"context"
	"fmt"
	"time"

	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// Finding kinds the detectors report.
const (
	OutboxParked           = "outbox_parked"
	ReceiptParked          = "receipt_parked"
	ReceiptPending         = "receipt_pending"
	ReceiptClaimExpired    = "receipt_claim_expired"
	DocumentNeedsAttention = "document_needs_attention"
	DocumentClaimExpired   = "document_claim_expired"
	RelayLeaseExpired      = "relay_lease_expired"
)

// Kinds are every kind a detector run checks, so a run closes those it no
// longer sees.
var Kinds = []string{OutboxParked, ReceiptParked, ReceiptPending, ReceiptClaimExpired,
	DocumentNeedsAttention, DocumentClaimExpired, RelayLeaseExpired}

// Config sets how old work must be before it counts as stuck.
type Config struct {
	PendingAfter   time.Duration // a receipt still pending after this
	AttentionAfter time.Duration // a document in needs_attention longer than this
	ClaimAfter     time.Duration // a claim expired this long ago and not taken over
	LeaseAfter     time.Duration // a relay lease expired this long ago
	MaxPerKind     int           // findings read per query
}

// Detector reads the other services' schemas through read-only connections.
type Detector struct {
	ingest   *store.IngestReader
	invoicer *store.InvoicerReader
	relay    *store.RelayReader
	cfg      Config
}

// New returns a detector reading each schema through its reader.
func New(ingest *store.IngestReader, invoicer *store.InvoicerReader, relay *store.RelayReader, cfg Config) *Detector {
	return &Detector{ingest: ingest, invoicer: invoicer, relay: relay, cfg: cfg}
}

// Run returns what is stuck at now; an error is the first reader's that
// failed, and nothing is returned with it.
func (d *Detector) Run(ctx context.Context, now time.Time) ([]store.Finding, error) {
	var out []store.Finding
	for _, check := range []func(context.Context, time.Time) ([]store.Finding, error){
		d.outboxes, d.receipts, d.documents, d.leases,
	} {
		found, err := check(ctx, now)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

func (d *Detector) outboxes(ctx context.Context, _ time.Time) ([]store.Finding, error) {
	ing, err := d.ingest.ParkedOutbox(ctx, d.cfg.MaxPerKind)
	if err != nil {
		return nil, err
	}
	inv, err := d.invoicer.ParkedOutbox(ctx, d.cfg.MaxPerKind)
	if err != nil {
		return nil, err
	}
	out := make([]store.Finding, 0, len(ing)+len(inv))
	for _, r := range ing {
		out = append(out, store.Finding{Kind: OutboxParked, Reference: "ingest.outbox:" + r.EventKey, Detail: r.EventType + ": " + r.Reason})
	}
	for _, r := range inv {
		out = append(out, store.Finding{Kind: OutboxParked, Reference: "invoicer.outbox:" + r.EventKey, Detail: r.EventType + ": " + r.Reason})
	}
	return out, nil
}

func (d *Detector) receipts(ctx context.Context, now time.Time) ([]store.Finding, error) {
	rows, err := d.ingest.StuckReceipts(ctx, now.Add(-d.cfg.ClaimAfter), now.Add(-d.cfg.PendingAfter), d.cfg.MaxPerKind)
	if err != nil {
		return nil, err
	}
	out := make([]store.Finding, 0, len(rows))
	for _, r := range rows {
		kind := ReceiptPending
		switch {
		case r.Status == "parked":
			kind = ReceiptParked
		case r.ClaimExpired:
			kind = ReceiptClaimExpired
		}
		out = append(out, store.Finding{Kind: kind, Reference: fmt.Sprintf("receipt:%d", r.ID),
			Detail: fmt.Sprintf("%s event %s, %d attempts", r.Source, r.EventID, r.Attempts)})
	}
	return out, nil
}

func (d *Detector) documents(ctx context.Context, now time.Time) ([]store.Finding, error) {
	rows, err := d.invoicer.StuckDocuments(ctx, now.Add(-d.cfg.ClaimAfter), now.Add(-d.cfg.AttentionAfter), d.cfg.MaxPerKind)
	if err != nil {
		return nil, err
	}
	out := make([]store.Finding, 0, len(rows))
	for _, r := range rows {
		f := store.Finding{Kind: DocumentNeedsAttention, Reference: r.Reference, Detail: r.Reason}
		if r.ClaimExpired {
			f = store.Finding{Kind: DocumentClaimExpired, Reference: r.Reference, Detail: "claim expired while " + r.Status}
		}
		out = append(out, f)
	}
	return out, nil
}

func (d *Detector) leases(ctx context.Context, now time.Time) ([]store.Finding, error) {
	rows, err := d.relay.ExpiredLeases(ctx, now.Add(-d.cfg.LeaseAfter))
	if err != nil {
		return nil, err
	}
	out := make([]store.Finding, 0, len(rows))
	for _, r := range rows {
		out = append(out, store.Finding{Kind: RelayLeaseExpired, Reference: r.Name,
			Detail: "last held by " + r.Holder + ", expired " + r.ExpiresAt.UTC().Format(time.RFC3339)})
	}
	return out, nil
}

// Name implements reconcile.Checker.
func (d *Detector) Name() string { return "detectors" }

// Kinds implements reconcile.Checker.
func (d *Detector) Kinds() []string { return Kinds }
