package sweep

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/services/reconciler/internal/store"
)

// ActionResolvedByDocument is how the sweep closes a missing_document case
// whose valid document now exists; ActorReconciler is who it says closed it.
const (
	ActionResolvedByDocument = "resolved_by_document"
	ActorReconciler          = "reconciler"
)

// What republish did with a missing document's event, in its case's evidence.
const (
	outcomeSent       = "republished"
	outcomeNoEvent    = "no_outbox_event"
	outcomeParked     = "outbox_parked"
	outcomeSendFailed = "send_failed"
)

// openMissing opens, or refreshes, the missing_document case of source id
// with its money and what the sweep saw: the document's status when a
// not-valid one exists, and what became of the event.
func (r *run) openMissing(ctx context.Context, src source, id, outcome string) error {
	money, err := r.money(ctx, src, id)
	if err != nil && !errkind.Is(err, errkind.NotFound) {
		return err
	}
	statuses, err := r.invoicer.DocumentStatuses(ctx, src.kind, src.docKind, []string{id})
	if err != nil {
		return err
	}
	ev := map[string]any{"document_kind": src.docKind, "event_key": src.eventKey(id), "event": outcome}
	if st, ok := statuses[id]; ok {
		ev["document_status"] = st
	}
	c := store.NewCase{Kind: cases.MissingDocument, Subject: src.kind + ":" + id, PSPPaymentID: money.PaymentID,
		OrderID: money.OrderID, Currency: money.Currency, Evidence: ev}
	if money.Currency != "" {
		c.AmountMinor = &money.AmountMinor
	}
	if src.kind == "refund" {
		c.PSPRefundID = id
	}
	if _, err := r.own.OpenCase(ctx, c); err != nil {
		return err
	}
	r.res.Cases++
	return nil
}

func (r *run) money(ctx context.Context, src source, id string) (store.Money, error) {
	if src.kind == "refund" {
		return r.ingest.RefundMoney(ctx, id)
	}
	return r.ingest.PaymentMoney(ctx, id)
}

// closeResolved closes the open missing_document cases (at most MaxPerRun)
// whose payment or refund now has a valid document.
func (r *run) closeResolved(ctx context.Context) error {
	open, err := r.own.OpenCasesOfKind(ctx, cases.MissingDocument, max(r.cfg.MaxPerRun, 1))
	if err != nil {
		return err
	}
	for _, c := range open {
		src, id, ok := r.sourceOfSubject(c.Subject)
		if !ok {
			continue
		}
		valid, err := r.invoicer.SourcesWithValidDocument(ctx, src.kind, src.docKind, []string{id})
		if err != nil {
			return err
		}
		if len(valid) == 0 {
			continue
		}
		if _, err := r.own.CloseCase(ctx, c.ID, ActorReconciler, ActionResolvedByDocument,
			"a valid "+src.docKind+" exists"); err != nil && !errkind.Is(err, errkind.NotFound) {
			return err
		}
		r.res.Resolved++
		r.log.Info("missing document case resolved", zap.Int64("case_id", c.ID), zap.String("subject", c.Subject))
	}
	return nil
}

// sourceOfSubject finds the source and id of a case subject.
func (s *Sweeper) sourceOfSubject(subject string) (source, string, bool) {
	kind, id, ok := strings.Cut(subject, ":")
	for _, src := range s.sources() {
		if ok && id != "" && src.kind == kind {
			return src, id, true
		}
	}
	return source{}, "", false
}
