package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/api/openapi/openapitest"
	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/services/invoicer/internal/admin"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
)

// get serves one GET of the invoicer's admin API.
func get(t *testing.T, env *invoicertest.Env, path string, out any) int {
	t.Helper()
	srv := httpserver.New(zaptest.NewLogger(t), httpserver.Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
	admin.New(env.Store, nil, zaptest.NewLogger(t), nil).Register(srv.Admin("tok"))
	code, body := checkedGet(t, srv.AdminEcho(), path)
	if out != nil && code == http.StatusOK {
		if err := json.Unmarshal([]byte(body), out); err != nil {
			t.Fatal(err)
		}
	}
	return code
}

// checkedGet serves one GET of the admin port h through a client that
// holds the exchange to the invoicer's OpenAPI document.
func checkedGet(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	ts := httptest.NewServer(h)
	defer ts.Close()
	req, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := openapitest.Client(t, "invoicer", nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestBoardCountsSmallTablesExactly(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	env.Record(t, invoicertest.Payment("board-1", 100_00, false))
	park(t, env, "board-2")
	var b admin.Board
	if code := get(t, env, "/admin/board", &b); code != http.StatusOK {
		t.Fatalf("GET /admin/board: %d", code)
	}
	if b.Documents["pending"] != 1 || b.Documents["needs_attention"] != 1 || len(b.Estimated) != 0 {
		t.Errorf("board %+v, want 1 pending and 1 needs_attention, counted", b)
	}
	if b.Due.Pending != 1 || b.Due.Parked != 1 {
		t.Errorf("due %+v, want 1 due and 1 parked", b.Due)
	}
}

// Past the threshold (by the planner's estimate) the final statuses are
// estimated from pg_stats and marked; the active ones stay exact.
func TestBoardEstimatesFinalStatusesOnBigTables(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	ctx := context.Background()
	park(t, env, "big-0")
	if _, err := env.Pool.Exec(ctx, `INSERT INTO invoicer.fiscal_documents
  (source_kind, source_ref, kind, event_key, reference, cfe_type, status, amount_minor, currency, buyer)
SELECT 'payment', 'big-' || i, 'invoice', 'payment:big-' || i || ':paid', (800000000 + i)::text, 101, 'authorized', 100, 'UYU', '{}'
FROM generate_series(1, $1) AS i`, admin.EstimateFrom+1000); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Pool.Exec(ctx, `ANALYZE invoicer.fiscal_documents`); err != nil {
		t.Fatal(err)
	}
	var b admin.Board
	if code := get(t, env, "/admin/board", &b); code != http.StatusOK {
		t.Fatalf("GET /admin/board: %d", code)
	}
	if !slices.Equal(b.Estimated, []string{"authorized"}) {
		t.Errorf("estimated %v, want [authorized]", b.Estimated)
	}
	if n := b.Documents["authorized"]; n < admin.EstimateFrom*9/10 || n > admin.EstimateFrom*12/10 {
		t.Errorf("authorized estimated at %d, want about %d", n, admin.EstimateFrom+1000)
	}
	if b.Documents["needs_attention"] != 1 {
		t.Errorf("needs_attention %d, want exactly 1", b.Documents["needs_attention"])
	}
}

func TestTraceFindsADocumentByEveryIdentifier(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	d := env.Record(t, invoicertest.Payment("trace-pay", 100_00, false))
	if _, err := env.Pool.Exec(context.Background(), `UPDATE invoicer.fiscal_documents SET provider_series = 'A', provider_number = 77 WHERE id = $1`, d.ID); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"trace-pay", d.Reference, "A-77", "a 77", "A77"} {
		var tr struct{ Documents []admin.TraceDocument }
		if code := get(t, env, "/admin/trace?q="+url.QueryEscape(q), &tr); code != http.StatusOK || len(tr.Documents) != 1 || tr.Documents[0].Document.ID != d.ID {
			t.Errorf("trace %q: %d, %+v; want document %d", q, code, tr.Documents, d.ID)
		}
	}
	var none struct{ Documents []admin.TraceDocument }
	if code := get(t, env, "/admin/trace?q=nothing-here", &none); code != http.StatusOK || len(none.Documents) != 0 {
		t.Errorf("trace of an unknown id: %d, %d documents; want 200 and none", code, len(none.Documents))
	}
	if code := get(t, env, "/admin/trace?q=", nil); code != http.StatusBadRequest {
		t.Errorf("empty q: %d, want 400", code)
	}
}
