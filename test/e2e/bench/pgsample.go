package bench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// activeQueries lists what this database's backends are doing right now:
// each active statement's start and what it waits on ("CPU" when nothing).
const activeQueries = `
SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 70),
       coalesce(wait_event_type || ':' || wait_event, 'CPU')
FROM pg_stat_activity
WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`

// pgSampler samples pg_stat_activity every interval: a poor man's profile
// of PostgreSQL by statement, since pg_stat_statements needs a server
// restart. The average number of backends seen running a statement is the
// share of a core (or of a wait) it takes.
type pgSampler struct {
	db       *pgxpool.Pool
	interval time.Duration
}

// ActiveStatement is a statement and what its backends were doing, with
// the average number of backends seen in that state over a stage.
type ActiveStatement struct {
	Statement string  `json:"statement"`
	State     string  `json:"state"` // CPU, or the wait event
	Backends  float64 `json:"backends"`
}

// run samples until ctx ends and returns the top statements, busiest
// first.
func (p pgSampler) run(ctx context.Context, top int) []ActiveStatement {
	counts := map[[2]string]int{}
	samples := 0
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return busiest(counts, samples, top)
		case <-ticker.C:
		}
		rows, err := p.db.Query(ctx, activeQueries)
		if err != nil {
			continue // the stage ended mid-query, or one sample is lost
		}
		samples++
		for rows.Next() {
			var k [2]string
			if rows.Scan(&k[0], &k[1]) == nil {
				counts[k]++
			}
		}
		rows.Close()
	}
}

func busiest(counts map[[2]string]int, samples, top int) []ActiveStatement {
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b [2]string) int { return cmp.Compare(counts[b], counts[a]) })
	out := []ActiveStatement{}
	for _, k := range keys[:min(top, len(keys))] {
		out = append(out, ActiveStatement{Statement: k[0], State: k[1], Backends: float64(counts[k]) / float64(max(samples, 1))})
	}
	return out
}

// describe writes the statements one per line for the progress output.
func describe(s []ActiveStatement) string {
	if len(s) == 0 {
		return " none seen"
	}
	var b strings.Builder
	for _, a := range s {
		fmt.Fprintf(&b, "\n           %.2f %-22s %s", a.Backends, a.State, a.Statement)
	}
	return b.String()
}
