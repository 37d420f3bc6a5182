package fiscalsim

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// Profile is a seeded fault distribution for load and chaos runs: every
// emission without a Rule of its own draws its faults from it, so a run can
// be reproduced. The zero Profile injects nothing.
type Profile struct {
	Seed            uint64        // 0 means 1
	LatencyMax      time.Duration // each request waits uniform [0, LatencyMax)
	FailRate        float64       // chance of HTTP 503 before acting
	HangRate        float64       // chance the document is stored and the answer held for HangFor
	HangFor         time.Duration // how long a held answer waits (default: until the client gives up)
	DuplicateRate   float64       // chance the document is stored twice; the copy is marked Injected
	PendingRate     float64       // chance DGI answers pending for 1..PendingPollsMax queries
	PendingPollsMax int
	RejectRate      float64 // chance DGI rejects the document
}

// profileDice draws a Profile's decisions; safe for concurrent use.
type profileDice struct {
	mu  sync.Mutex
	rnd *rand.Rand
	p   Profile
}

func newProfileDice(p Profile) *profileDice {
	seed := p.Seed
	if seed == 0 {
		seed = 1
	}
	return &profileDice{rnd: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)), p: p}
}

// draw returns the action of one request (an emission when emit).
func (d *profileDice) draw(emit bool) action {
	d.mu.Lock()
	defer d.mu.Unlock()
	var a action
	if d.p.LatencyMax > 0 {
		a.latency = time.Duration(d.rnd.Int64N(int64(d.p.LatencyMax)))
	}
	if !emit {
		return a
	}
	switch {
	case d.rnd.Float64() < d.p.FailRate:
		a.fail = true
		return a
	case d.rnd.Float64() < d.p.HangRate:
		a.hang, a.hangFor = true, d.p.HangFor
	}
	a.duplicate = d.rnd.Float64() < d.p.DuplicateRate
	a.reject = d.rnd.Float64() < d.p.RejectRate
	if d.p.PendingPollsMax > 0 && d.rnd.Float64() < d.p.PendingRate {
		a.pending = 1 + d.rnd.IntN(d.p.PendingPollsMax)
	}
	return a
}

// plantRequest is a document put at the sandbox behind onceflow's back.
type plantRequest struct {
	Reference string `json:"reference"`
	Type      int    `json:"type"`
	Total     string `json:"total"`
	Currency  string `json:"currency"`
	Addendum  string `json:"addendum"`
}

// plant serves POST /sandbox/documents: store an authorized document as if
// someone had issued it outside onceflow. Tests use it to prove that the
// checks notice a document nobody asked for.
func (s *Server) plant(w http.ResponseWriter, r *http.Request) {
	var req plantRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || !digits(req.Reference) || req.Reference == "" || req.Type == 0 {
		writeError(w, http.StatusBadRequest, "invalid_document", "want reference (digits), type, and optionally total, currency, addendum")
		return
	}
	if req.Currency == "" {
		req.Currency = "UYU"
	}
	draft := Document{Reference: req.Reference, Type: req.Type, Total: req.Total, Currency: req.Currency,
		Addendum: req.Addendum, IssueDate: s.cfg.Now().Format(dateLayout)}
	docs := s.issue([]Document{draft}, action{})
	server.WriteJSON(w, http.StatusOK, docs[0])
}

// drop serves DELETE /sandbox/documents/{reference}: forget every document
// under the reference, as if it had never been issued.
func (s *Server) drop(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("reference")
	s.mu.Lock()
	kept, moved := s.docs[:0], make([]int, len(s.docs)) // moved: old index → new, -1 if dropped
	for i, d := range s.docs {
		moved[i] = -1
		if d.Reference != ref {
			moved[i] = len(kept)
			kept = append(kept, d)
		}
	}
	dropped := len(s.docs) - len(kept)
	s.docs = kept
	s.reindexLocked(moved)
	s.mu.Unlock()
	server.WriteJSON(w, http.StatusOK, map[string]int{"dropped": dropped})
}
