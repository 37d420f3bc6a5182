package emit

import (
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/errkind"
	"github.com/onceflow/onceflow/provider/fiscal"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// unjudged are the outcomes of an attempt the provider did not judge the
// document in: the send never reached it, or nothing was sent (the look-up
// before the send failed, or the document could not be built or must
// wait). They neither count as a refusal nor end a run of refusals.
var unjudged = map[string]bool{
	"unavailable": true, "lookup_failed": true, "build_failed": true, "exchange_rate_missing": true, "waiting_for_invoice": true,
}

// toSave is what saving r for d, claimed with token, writes; its times are
// the database's.
func toSave(d store.Document, token uuid.UUID, r result) store.Result {
	p := store.Result{
		ID: d.ID, LeaseToken: token, ClaimedStatus: d.Status, Status: r.status, UnknownSince: r.unknownSince,
		UnknownSinceNow: r.unknownNow, DueIn: r.after, DGIPolls: r.dgiPolls, LastError: optional(r.lastError), AttentionReason: optional(r.attention),
		Refused: r.outcome == "refused", Unavailable: unjudged[r.outcome],
		ProviderSeries: d.ProviderSeries, ProviderNumber: d.ProviderNumber, ProviderStatus: d.ProviderStatus,
		ProviderCAE: d.ProviderCAE, ProviderSecurityCode: d.ProviderSecurityCode, ProviderURL: d.ProviderURL, IssueDate: d.IssueDate,
		ProviderCAEFrom: d.ProviderCAEFrom, ProviderCAETo: d.ProviderCAETo, ProviderCAEExpires: d.ProviderCAEExpires,
	}
	if h := r.held; h != nil {
		p.ProviderSeries, p.ProviderNumber, p.ProviderStatus = &h.Series, &h.Number, &h.ProviderStatus
		p.ProviderCAE, p.ProviderSecurityCode, p.ProviderURL = &h.CAEID, &h.SecurityCode, &h.VerifyURL
		p.ProviderCAEFrom, p.ProviderCAETo, p.ProviderCAEExpires = store.CAERange(*h)
		if !h.IssueDate.IsZero() {
			p.IssueDate = &h.IssueDate
		}
	}
	return p
}

// attempt describes one provider call with its outcome and latency, and
// counts it. A failed call's outcome is "refused" when the provider surely
// did not act (an unavailable one's too: the call failed, whatever the
// document's count of refusals), "ambiguous" for a send that it may have
// acted on, "error" otherwise.
func (e *Emitter) attempt(id int64, op string, start time.Time, outcome string, err error) store.Attempt {
	elapsed := time.Since(start)
	var msg *string
	if err != nil {
		outcome, msg = "error", optional(err.Error())
		switch {
		case errkind.Is(err, errkind.Refused):
			outcome = "refused"
		case op == "emit" && !errors.Is(err, fiscal.ErrInvalidDocument):
			outcome = "ambiguous"
		}
	}
	e.latency.WithLabelValues(op, outcome).Observe(elapsed.Seconds())
	return store.Attempt{DocumentID: id, Operation: op, Outcome: outcome, Error: msg, LatencyMS: int32(elapsed.Milliseconds())}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
