package reconcilertest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceflow/onceflow/services/reconciler/internal/pspaudit"
)

// IngestAdminToken is the admin token the fake ingest admin API accepts.
const IngestAdminToken = "ingest-admin-test-token"

// Ingest is a stand-in for ingest's admin API as the sweep uses it: POST
// /admin/outbox/republish makes the named outbox rows of its database due
// again, unless parked, and reports the parked and unknown keys, as ingest
// does (services/ingest/internal/store.Republish). It cannot be imported
// from here, being ingest's internal package.
type Ingest struct {
	URL     string
	fail    atomic.Int32 // the status to answer instead, 0 for none
	hits    atomic.Int32
	mu      sync.Mutex
	refused map[string]bool // keys whose request fails with 500
}

// NewIngest serves the fake on a local port over pool (ingest's schema,
// as its owner) until the test ends.
func NewIngest(tb testing.TB, pool *pgxpool.Pool) *Ingest {
	tb.Helper()
	in := &Ingest{refused: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /admin/outbox/republish", func(w http.ResponseWriter, r *http.Request) {
		in.hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+IngestAdminToken {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if code := in.fail.Load(); code != 0 {
			http.Error(w, `{"error":"failing as told"}`, int(code))
			return
		}
		var req struct {
			EventKeys []string `json:"event_keys"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.EventKeys) == 0 || len(req.EventKeys) > 100 {
			http.Error(w, `{"error":"event_keys: want 1 to 100 event keys"}`, http.StatusBadRequest)
			return
		}
		if in.refuses(req.EventKeys) {
			http.Error(w, `{"error":"refused as told"}`, http.StatusInternalServerError)
			return
		}
		out := struct {
			Republished []string `json:"republished"`
			Parked      []string `json:"parked"`
			Unknown     []string `json:"unknown"`
		}{[]string{}, []string{}, []string{}}
		for _, k := range req.EventKeys {
			var parked bool
			err := pool.QueryRow(r.Context(), `SELECT parked_at IS NOT NULL FROM ingest.outbox WHERE event_key = $1`, k).Scan(&parked)
			switch {
			case err != nil:
				out.Unknown = append(out.Unknown, k)
			case parked:
				out.Parked = append(out.Parked, k)
			default:
				if _, err := pool.Exec(r.Context(), `UPDATE ingest.outbox SET published_at = NULL, attempts = 0,
					last_error = NULL, next_attempt_at = now() WHERE event_key = $1`, k); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				out.Republished = append(out.Republished, k)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	in.URL = srv.URL
	return in
}

// Fail makes every request answer code from now on; 0 answers again.
func (in *Ingest) Fail(code int) { in.fail.Store(int32(code)) }

// Refuse makes every request naming one of keys fail with 500.
func (in *Ingest) Refuse(keys ...string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range keys {
		in.refused[k] = true
	}
}

func (in *Ingest) refuses(keys []string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.ContainsFunc(keys, func(k string) bool { return in.refused[k] })
}

// Hits is how many republish requests arrived.
func (in *Ingest) Hits() int { return int(in.hits.Load()) }

// Due returns the event keys of ingest.outbox that are due for the relay
// (unpublished, not parked), sorted: those the sweep had ingest announce
// again, in these tests where the relay does not run.
func (d *DB) Due(tb testing.TB) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := d.Pool.Query(ctx, `SELECT event_key FROM ingest.outbox WHERE published_at IS NULL AND parked_at IS NULL`)
	if err != nil {
		tb.Fatalf("read due outbox rows: %v", err)
	}
	defer rows.Close()
	keys := []string{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			tb.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// Client is the reconciler's client of this fake.
func (in *Ingest) Client() *pspaudit.IngestAdmin {
	return pspaudit.NewIngestAdmin(in.URL, IngestAdminToken, &http.Client{Timeout: 10 * time.Second})
}
