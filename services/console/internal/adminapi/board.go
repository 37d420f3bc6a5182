package adminapi

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/onceflow/onceflow/pkg/board"
)

// Board is the whole pipeline board: each service's part, read from its
// admin API, with the error of any part that could not be read.
type Board struct {
	Ingest struct {
		Receipts board.Stage       `json:"receipts"`
		Outbox   board.Stage       `json:"outbox"`
		Cases    []board.CaseCount `json:"cases"`
	}
	Invoicer struct {
		Documents map[string]int64  `json:"documents"`
		Estimated []string          `json:"estimated"`
		Due       board.Stage       `json:"due"`
		Outbox    board.Stage       `json:"outbox"`
		Cases     []board.CaseCount `json:"cases"`
	}
	Outboxes []OutboxStatus
	Leases   []Lease
	Recon    struct {
		LastRun *Run              `json:"last_run"`
		Cases   []board.CaseCount `json:"cases"`
	}
	// Errors maps a part ("ingest", "relay", ...) to why it is missing.
	Errors map[string]string
	// Took is how long reading every part took.
	Took time.Duration
}

// OutboxStatus is one outbox's backlog as the relay reports it.
type OutboxStatus struct {
	Outbox        string     `json:"outbox"`
	Pending       int64      `json:"pending"`
	Parked        int64      `json:"parked"`
	OldestPending *time.Time `json:"oldest_pending"`
}

// Lease is one relay lease: the leader of one outbox shard.
type Lease struct {
	Name      string    `json:"name"`
	Holder    string    `json:"holder"`
	Token     int64     `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	Live      bool      `json:"live"`
}

// Run is the reconciler's latest run.
type Run struct {
	ID          int64      `json:"id"`
	StartedAt   time.Time  `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	Checked     int32      `json:"checked"`
	Missing     int32      `json:"missing"`
	Republished int32      `json:"republished"`
	Error       *string    `json:"error"`
}

// OpenCases sums the open cases by kind over every service.
func (b *Board) OpenCases() []board.CaseCount {
	byKind := map[string]board.CaseCount{}
	for _, list := range [][]board.CaseCount{b.Ingest.Cases, b.Invoicer.Cases, b.Recon.Cases} {
		for _, c := range list {
			k := byKind[c.Kind]
			k.Kind, k.Open = c.Kind, k.Open+c.Open
			k.OldestAgeSeconds = max(k.OldestAgeSeconds, c.OldestAgeSeconds)
			byKind[c.Kind] = k
		}
	}
	out := make([]board.CaseCount, 0, len(byKind))
	for _, c := range byKind {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Board reads every service's part of the board at once; a part that
// fails is named in Errors and the rest is still shown.
func (c *Client) Board(ctx context.Context) *Board {
	start := time.Now()
	b := &Board{Errors: map[string]string{}}
	var outboxes struct {
		Outboxes []OutboxStatus `json:"outboxes"`
	}
	var leases struct {
		Leases []Lease `json:"leases"`
	}
	parts := []struct {
		name, service, path string
		out                 any
	}{
		{"ingest", "ingest", "/admin/board", &b.Ingest},
		{"invoicer", "invoicer", "/admin/board", &b.Invoicer},
		{"relay", "relay", "/admin/outboxes", &outboxes},
		{"leaders", "relay", "/admin/leaders", &leases},
		{"reconciler", "reconciler", "/admin/board", &b.Recon},
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Go(func() {
			if err := c.Get(ctx, p.service, p.path, nil, p.out); err != nil {
				mu.Lock()
				b.Errors[p.name] = err.Error()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.Outboxes, b.Leases = outboxes.Outboxes, leases.Leases
	b.Took = time.Since(start)
	return b
}

// LeadersOf returns the leases of outbox's shards (named
// "outbox:<outbox>:<shard>").
func (b *Board) LeadersOf(outbox string) []Lease {
	var out []Lease
	for _, l := range b.Leases {
		if strings.HasPrefix(l.Name, "outbox:"+outbox+":") {
			out = append(out, l)
		}
	}
	return out
}
