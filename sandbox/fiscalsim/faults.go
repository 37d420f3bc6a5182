package fiscalsim

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// AnyReference is the rule key that applies to every reference without a
// rule of its own.
const AnyReference = "*"

// maxHang bounds how long a held answer waits for its client to give up.
const maxHang = time.Minute

// Rule is a fault injected into requests for one CFENumReferencia. Counters
// (FailBefore, HangAfterCommit) are consumed one per emission; the other
// fields last until the rule is replaced or cleared. The zero Rule injects
// nothing.
type Rule struct {
	// LatencyMS delays every emission and query before it acts.
	LatencyMS int `json:"latency_ms,omitempty"`
	// FailBefore answers this many emissions with HTTP 503 without storing
	// anything.
	FailBefore int `json:"fail_before,omitempty"`
	// HangAfterCommit makes this many emissions store the document and then
	// hold the answer (see HangMS): the client sees a timeout although the
	// document exists.
	HangAfterCommit int `json:"hang_after_commit,omitempty"`
	// HangMS is how long a held answer waits; 0 waits until the client gives
	// up (at most a minute).
	HangMS int `json:"hang_ms,omitempty"`
	// Duplicate makes each emission store the document twice: two numbers
	// under one reference.
	Duplicate bool `json:"duplicate,omitempty"`
	// PendingPolls keeps new documents at CFEStatus 4 (sent to DGI) for this
	// many queries that return them, then authorizes them (5); -1 keeps them
	// pending for ever.
	PendingPolls int `json:"pending_polls,omitempty"`
	// Reject stores new documents rejected by DGI (CFEStatus 3).
	Reject bool `json:"reject,omitempty"`
	// Observe stores new documents accepted by DGI with remarks
	// ("observado"), under the sandbox's CFEStatus 8: InvoiCy's own code for
	// it is not known (docs/cfe.md), so a client maps 8 to observed itself.
	Observe bool `json:"observe,omitempty"`
	// Refuse answers every emission with a refusal (MsgCod ≠ 0) without
	// storing anything, until the rule is replaced or cleared: a document
	// the provider refuses every time.
	Refuse bool `json:"refuse,omitempty"`
	// WrongAnswer stores each emitted document as sent but describes it
	// wrongly in the emission's answer: "type" (another CFE type),
	// "addendum" (another source's addendum) or "total" (one more cent).
	// Queries still answer what is stored.
	WrongAnswer string `json:"wrong_answer,omitempty"`
}

// Values of Rule.WrongAnswer.
const (
	WrongType     = "type"
	WrongAddendum = "addendum"
	WrongTotal    = "total"
)

// action is what one request does, taken from a Rule under the lock.
type action struct {
	latency   time.Duration
	fail      bool
	hang      bool
	hangFor   time.Duration
	duplicate bool
	pending   int
	reject    bool
	observe   bool
	refuse    bool
	wrong     string
}

// SetRule injects r into requests for reference (AnyReference for every
// reference without its own rule), replacing any earlier rule.
func (s *Server) SetRule(reference string, r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules[reference] = r
}

// ClearRules removes every rule.
func (s *Server) ClearRules() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.rules)
}

// take returns what an emission (emit true) or a keyed look-up for
// reference does, consuming the rule's counters.
func (s *Server) take(reference string, emit bool) action {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, r, ok := s.ruleLocked(reference)
	if !ok {
		return s.dice.draw(emit)
	}
	a := action{latency: time.Duration(r.LatencyMS) * time.Millisecond}
	if !emit {
		return a
	}
	a.duplicate, a.pending, a.reject, a.wrong, a.refuse, a.observe = r.Duplicate, r.PendingPolls, r.Reject, r.WrongAnswer, r.Refuse, r.Observe
	switch {
	case r.FailBefore > 0:
		r.FailBefore--
		a.fail = true
	case r.HangAfterCommit > 0:
		r.HangAfterCommit--
		a.hang, a.hangFor = true, time.Duration(r.HangMS)*time.Millisecond
	}
	s.rules[key] = r
	return a
}

// ruleLocked returns the rule that applies to reference, its own or else
// AnyReference's, and the key it is kept under; ok is false when neither
// exists. The caller holds s.mu.
func (s *Server) ruleLocked(reference string) (key string, r Rule, ok bool) {
	if r, ok := s.rules[reference]; ok {
		return reference, r, true
	}
	r, ok = s.rules[AnyReference]
	return AnyReference, r, ok
}

// queryLatency is how long a query for the references f names waits
// before it acts: the longest latency their rules set (AnyReference's for
// those without their own), and one draw from the profile when any of
// them, or a query naming none, has no rule at all.
func (s *Server) queryLatency(f filter) time.Duration {
	refs := f.references()
	if len(refs) == 0 {
		refs = []string{""} // no rule is kept under ""
	}
	var longest time.Duration
	draw := false
	s.mu.Lock()
	for _, ref := range refs {
		_, r, ok := s.ruleLocked(ref)
		draw = draw || !ok
		longest = max(longest, time.Duration(r.LatencyMS)*time.Millisecond)
	}
	s.mu.Unlock()
	if draw {
		longest = max(longest, s.dice.draw(false).latency)
	}
	return longest
}

// hold delays an answer after the document was stored: for hangFor, or
// until the client disconnects when it is zero.
func hold(ctx context.Context, hangFor time.Duration) {
	if hangFor <= 0 || hangFor > maxHang {
		hangFor = maxHang
	}
	_ = backoff.Sleep(ctx, hangFor)
}

// putRule serves PUT /sandbox/faults/{reference} with a Rule as JSON body.
func (s *Server) putRule(w http.ResponseWriter, r *http.Request) {
	var rule Rule
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rule); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_rule", "want a JSON fault rule: "+err.Error())
		return
	}
	switch rule.WrongAnswer {
	case "", WrongType, WrongAddendum, WrongTotal:
	default:
		writeError(w, http.StatusBadRequest, "invalid_rule", "wrong_answer: want type, addendum or total")
		return
	}
	ref := r.PathValue("reference")
	if ref != AnyReference && !digits(ref) {
		writeError(w, http.StatusBadRequest, "invalid_reference", "want digits or *")
		return
	}
	s.SetRule(ref, rule)
	server.WriteJSON(w, http.StatusOK, rule)
}

// listRules serves GET /sandbox/faults: the rules by reference.
func (s *Server) listRules(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := make(map[string]Rule, len(s.rules))
	for k, v := range s.rules {
		out[k] = v
	}
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, out)
}

// writeError answers status with the JSON error body the services use.
func writeError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// misdescribe returns docs as an answer describes them under act: altered
// as act.wrong asks, or unchanged. The stored documents are not touched.
func misdescribe(docs []Document, act action) []Document {
	if act.wrong == "" {
		return docs
	}
	out := make([]Document, len(docs))
	for i, d := range docs {
		d = d.clone()
		switch act.wrong {
		case WrongType:
			d.Type++
		case WrongAddendum:
			d.Addendum += " (another source)"
		case WrongTotal:
			if total, err := money.ParseMinor(d.Total); err == nil {
				d.Total = money.FormatMinor(total + 1)
			}
		}
		out[i] = d
	}
	return out
}
