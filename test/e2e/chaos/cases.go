package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

// caseJSON is a case as the reconciler's GET /admin/cases lists it
// (docs/cases.md).
type caseJSON struct {
	ID           string         `json:"id"`
	Service      string         `json:"service"`
	Kind         string         `json:"kind"`
	Subject      string         `json:"subject"`
	PSPPaymentID string         `json:"psp_payment_id"`
	Evidence     map[string]any `json:"evidence"`
	Actions      []string       `json:"actions"`
}

// operatorActor is who the harness's resolutions are recorded as.
const operatorActor = "chaos-operator"

// refuse makes the fiscal sandbox refuse every send of payment pay's
// invoice until the operator lifts the fault (liftRefusal).
func (r *run) refuse(ctx context.Context, pay string) error {
	ref := fiscal.Reference("payment", pay, fiscal.KindInvoice)
	r.refusedMu.Lock()
	r.refused[pay] = ref
	r.refusedMu.Unlock()
	return r.s.Sandbox(ctx, http.MethodPut, "/sandbox/faults/"+ref, map[string]any{"refuse": true})
}

// chargedBack reports whether the harness charged payment pay back.
func (r *run) chargedBack(pay string) bool {
	r.chargebacksMu.Lock()
	defer r.chargebacksMu.Unlock()
	return slices.Contains(r.chargebacks, pay)
}

// chargebacksWithoutCase counts the payments the harness charged back that
// have no chargeback case at ingest yet, open or closed.
func (r *run) chargebacksWithoutCase(ctx context.Context) (int, error) {
	r.chargebacksMu.Lock()
	ids := slices.Clone(r.chargebacks)
	r.chargebacksMu.Unlock()
	var with int
	err := r.db.QueryRow(ctx, `SELECT count(DISTINCT psp_payment_id) FROM ingest.cases
		WHERE kind = 'chargeback' AND psp_payment_id = ANY($1)`, ids).Scan(&with)
	return len(ids) - with, err
}

// liftRefusal clears the fault on pay's invoice, as the provider's support
// would once told; an empty rule injects nothing.
func (r *run) liftRefusal(ctx context.Context, pay string) error {
	r.refusedMu.Lock()
	ref, ok := r.refused[pay]
	r.refusedMu.Unlock()
	if !ok {
		return fmt.Errorf("document_refused case for payment %q, whose invoice the harness never refused", pay)
	}
	return r.s.Sandbox(ctx, http.MethodPut, "/sandbox/faults/"+ref, map[string]any{})
}

// openCases lists every open case through the reconciler's admin API.
func (r *run) openCases(ctx context.Context) ([]caseJSON, error) {
	var out struct {
		Cases []caseJSON `json:"cases"`
	}
	err := r.s.Admin(ctx, r.s.AdminURL("reconciler-1"), http.MethodGet, "/admin/cases?status=open&limit=1000", nil, &out)
	return out.Cases, err
}

// closeCases plays one round of a careful operator over the open cases,
// through each owning service's admin API: a mismatched payment is
// accepted as its own sale, a second payment invoiced as a separate sale,
// an order recorded late re-applied, a rejected document re-issued, a
// refused one retried after the sandbox's fault is lifted, a chargeback
// the harness made acknowledged (its invoice stands), a parked outbox
// row unparked, a parked receipt replayed, an audit disagreement acknowledged only when the money it
// names provably has its one valid document. missing_document cases close
// themselves once the document exists; anything else stays open and fails
// the run. No case is closed as refunded at the PSP: the run refunds no
// unmatched payment there. It returns the cases it left open.
func (r *run) closeCases(ctx context.Context, docs []stack.Document) ([]caseJSON, error) {
	open, err := r.openCases(ctx)
	if err != nil {
		return nil, err
	}
	var left []caseJSON
	for _, c := range open {
		done, err := r.closeCase(ctx, c, docs)
		if err != nil {
			fmt.Fprintf(r.out, "chaos: operator: case %s (%s): %v\n", c.ID, c.Kind, err)
		}
		if !done {
			left = append(left, c)
		}
	}
	return left, nil
}

// closeCase acts on one case; done reports that it was resolved.
func (r *run) closeCase(ctx context.Context, c caseJSON, docs []stack.Document) (bool, error) {
	switch c.Kind {
	case "unmatched_payment":
		action, why := unmatchedAction(c)
		if action == "" {
			return false, nil
		}
		return r.resolve(ctx, c, action, why)
	case "document_rejected":
		return r.resolve(ctx, c, "reissue", "DGI rejected it; re-issued corrected under the next reference")
	case "document_refused":
		if err := r.liftRefusal(ctx, c.PSPPaymentID); err != nil {
			return false, err
		}
		return r.resolve(ctx, c, "retry", "the provider's fault was lifted")
	case "chargeback":
		if !r.chargedBack(c.PSPPaymentID) {
			return false, nil // money left that the harness never took back: a person must look
		}
		return r.resolve(ctx, c, "acknowledge", "the dispute is handled with the PSP; the invoice stands")
	case "parked_outbox_row":
		return r.unpark(ctx, c)
	case "parked_receipt": // used its attempts while services died; a new failure opens a new case
		return r.resolve(ctx, c, "replay", "the outage is over: applied again")
	case "audit_disagreement":
		if !r.proven(c, docs) {
			return false, nil
		}
		return r.resolve(ctx, c, "acknowledge", "the sandbox holds exactly one valid document for the money it names")
	}
	return false, nil // missing_document closes itself; other kinds need a person
}

// unmatchedAction is the action an operator takes on an unmatched payment,
// read from the case's evidence.
func unmatchedAction(c caseJSON) (action, why string) {
	switch c.Evidence["reason"] {
	case "amount_mismatch", "currency_mismatch":
		return "accept_as_sale", "the buyer paid another amount: invoiced as its own sale"
	case "second_payment":
		return "separate_sale", "the buyer paid the order twice and keeps both: a separate sale"
	case "unknown_order":
		return "reapply", "the order was recorded after the payment"
	}
	return "", ""
}

// resolve closes c at the service that owns it.
func (r *run) resolve(ctx context.Context, c caseJSON, action, why string) (bool, error) {
	var urls []string
	switch c.Service {
	case "ingest", "invoicer":
		for _, name := range r.s.Names(c.Service) {
			urls = append(urls, r.s.AdminURL(name))
		}
	case "reconciler":
		urls = []string{r.s.AdminURL("reconciler-1")}
	default:
		return false, fmt.Errorf("no service %q", c.Service)
	}
	body := map[string]any{"action": action, "actor": operatorActor, "reason": why}
	var last error
	for _, u := range urls {
		last = r.s.Admin(ctx, u, http.MethodPost, "/admin/cases/"+c.ID+"/resolve", body, nil)
		if last == nil || strings.Contains(last.Error(), ": 409 ") {
			return true, nil // 409: closed already, by a resolution whose answer was lost
		}
	}
	return false, last
}

// unpark sends a parked outbox row back to the relay.
func (r *run) unpark(ctx context.Context, c caseJSON) (bool, error) {
	schema, _, _ := strings.Cut(c.ID, "-")
	row, ok := strings.CutPrefix(c.Subject, "outbox:")
	if !ok {
		return false, fmt.Errorf("subject %q is not an outbox row", c.Subject)
	}
	path := fmt.Sprintf("/admin/outboxes/%s.outbox/parked/%s/unpark", schema, row)
	body := map[string]any{"actor": operatorActor, "reason": "SQS is back"}
	var last error
	for _, name := range r.s.Names("relay") {
		if last = r.s.Admin(ctx, r.s.AdminURL(name), http.MethodPost, path, body, nil); last == nil {
			return true, nil
		}
	}
	return false, last
}

// proven reports whether the documents under an audit disagreement's
// reference belong to a source the driver made that holds exactly one
// valid document of its type.
func (r *run) proven(c caseJSON, docs []stack.Document) bool {
	ref, _ := c.Evidence["reference"].(string)
	var under []stack.Document
	for _, d := range docs {
		if d.Reference == ref {
			under = append(under, d)
		}
	}
	keys := stack.BySource(under)
	if ref == "" || len(keys) != 1 {
		return false
	}
	sources := map[string]Source{}
	for _, s := range r.snapshot() {
		sources[s.Key] = s
	}
	for key := range keys {
		src, ok := sources[key]
		if !ok {
			return false
		}
		v := Check([]Source{src}, stack.BySource(docs)[key])
		return v.Missing == 0 && v.Duplicates == 0 && len(v.Problems) == 0
	}
	return false
}
