// Package board holds the JSON shapes the services' admin endpoints answer
// for the console (services/console): a service's part of the pipeline
// board, and the open cases by kind. Each endpoint answers from indexes or
// the planner's estimates, never a full scan, so the board stays fast on
// big tables.
package board

import (
	"time"

	"github.com/onceflow/onceflow/pkg/cases"
	"github.com/onceflow/onceflow/pkg/outbox"
)

// Stage is one stage's backlog: items waiting, items parked for a person,
// and when the oldest waiting item arrived (absent when none waits).
type Stage struct {
	Pending int64      `json:"pending"`
	Parked  int64      `json:"parked"`
	Oldest  *time.Time `json:"oldest,omitempty"`
}

// CaseCount is the open cases of one kind and the oldest one's age.
type CaseCount struct {
	Kind             string  `json:"kind"`
	Open             int64   `json:"open"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
}

// OutboxStage renders outbox statistics as a stage.
func OutboxStage(st outbox.Stats) Stage {
	s := Stage{Pending: st.Pending, Parked: st.Parked}
	if !st.OldestPending.IsZero() {
		t := st.OldestPending.UTC()
		s.Oldest = &t
	}
	return s
}

// Cases renders a schema's open-case statistics.
func Cases(stats []cases.Stat) []CaseCount {
	out := make([]CaseCount, len(stats))
	for i, s := range stats {
		out[i] = CaseCount{Kind: s.Kind, Open: s.Open, OldestAgeSeconds: s.OldestAge.Seconds()}
	}
	return out
}
