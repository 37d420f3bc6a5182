package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/services/invoicer/internal/admin"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// TestDocumentViewPagesItsAttempts records 45 attempts for a document and
// walks GET /admin/documents/:id page by page: 20 by default, newest first,
// each page continuing where the last stopped, every attempt seen once; a
// bad page parameter is a 400 naming it.
func TestDocumentViewPagesItsAttempts(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	srv := httpserver.New(zaptest.NewLogger(t), httpserver.Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
	admin.New(env.Store, nil, zaptest.NewLogger(t), nil).Register(srv.Admin("tok"))
	d := env.Record(t, invoicertest.Payment("pay-attempts", 100_00, false))
	attempts := make([]store.Attempt, 45)
	for i := range attempts {
		attempts[i] = store.Attempt{DocumentID: d.ID, Operation: "status", Outcome: fmt.Sprint("poll-", i), LatencyMS: 1}
	}
	if err := env.Store.InsertAttempts(t.Context(), attempts); err != nil {
		t.Fatal(err)
	}
	get := func(query string) (int, string) {
		return checkedGet(t, srv.AdminEcho(), fmt.Sprintf("/admin/documents/%d%s", d.ID, query))
	}
	type page struct {
		Attempts []struct {
			ID      int64  `json:"id"`
			Outcome string `json:"outcome"`
		} `json:"attempts"`
		NextBefore *int64 `json:"attempts_next_before"`
	}
	var sizes []int
	seen := map[int64]bool{}
	last := int64(1 << 62)
	query := ""
	for range 10 {
		code, body := get(query)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", query, code, body)
		}
		var p page
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Attempts))
		for _, a := range p.Attempts {
			if a.ID >= last || seen[a.ID] {
				t.Fatalf("attempt %d after %d: want each attempt once, newest first", a.ID, last)
			}
			seen[a.ID], last = true, a.ID
		}
		if p.NextBefore == nil {
			break
		}
		query = fmt.Sprintf("?attempts_before=%d", *p.NextBefore)
	}
	if fmt.Sprint(sizes) != "[20 20 5]" || len(seen) != 45 {
		t.Fatalf("pages of %v attempts (%d distinct), want [20 20 5] covering all 45", sizes, len(seen))
	}
	code, body := get("?attempts_limit=2")
	var p page
	if err := json.Unmarshal([]byte(body), &p); err != nil || code != http.StatusOK || len(p.Attempts) != 2 || p.Attempts[0].Outcome != "poll-44" {
		t.Fatalf("attempts_limit=2: %d %s, want the two newest", code, body)
	}
	for _, bad := range []string{"?attempts_limit=0", "?attempts_limit=201", "?attempts_before=abc", "?attempts_before=-3"} {
		code, body := get(bad)
		name := strings.TrimPrefix(strings.SplitN(bad, "=", 2)[0], "?")
		if code != http.StatusBadRequest || !strings.Contains(body, name) {
			t.Errorf("GET %s: %d %s, want 400 naming %s", bad, code, body, name)
		}
	}
}
