package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/services/invoicer/internal/admin"
	"github.com/onceflow/onceflow/services/invoicer/internal/invoicertest"
	"github.com/onceflow/onceflow/services/invoicer/internal/store"
)

// park records a payment's document and parks it in needs_attention.
func park(tb testing.TB, env *invoicertest.Env, id string) store.Document {
	tb.Helper()
	d := env.Record(tb, invoicertest.Payment(id, 100_00, false))
	if _, err := env.Pool.Exec(context.Background(), `UPDATE invoicer.fiscal_documents
SET status = 'needs_attention', attention_reason = 'test', unknown_since = now() WHERE id = $1`, d.ID); err != nil {
		tb.Fatal(err)
	}
	return d
}

func TestRetryAndVoidAreRecorded(t *testing.T) {
	t.Parallel()
	env := invoicertest.New(t)
	srv := httpserver.New(zaptest.NewLogger(t), httpserver.Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
	admin.New(env.Store, nil, zaptest.NewLogger(t), nil).Register(srv.Admin("tok"))
	post := func(id int64, body string) int {
		req := httptest.NewRequest(http.MethodPost, "/admin/documents/"+strconv.FormatInt(id, 10)+"/resolve", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		srv.AdminEcho().ServeHTTP(rec, req)
		return rec.Code
	}
	retried, voided := park(t, env, "pay-retry"), park(t, env, "pay-void")

	if code := post(retried.ID, `{"action":"retry","actor":"bo","reason":"duplicate voided at the provider"}`); code != http.StatusOK {
		t.Fatalf("retry: %d", code)
	}
	if code := post(voided.ID, `{"action":"void","actor":"bo","reason":"payment reversed"}`); code != http.StatusOK {
		t.Fatalf("void: %d", code)
	}
	if code := post(voided.ID, `{"action":"adopt","actor":"bo","reason":"x","series":"A","number":1}`); code != http.StatusConflict {
		t.Fatalf("adopt on a voided document: %d, want 409", code)
	}
	if code := post(999, `{"action":"void","actor":"bo","reason":"x"}`); code != http.StatusNotFound {
		t.Fatalf("unknown document: %d, want 404", code)
	}
	if d := env.Document(t, retried.Reference); d.Status != "pending" || d.AttentionReason != nil || d.UnknownSince != nil {
		t.Fatalf("retried document %s (%v), want pending and no longer unknown", d.Status, d.AttentionReason)
	}
	if d := env.Document(t, voided.Reference); d.Status != "voided" {
		t.Fatalf("voided document is %s", d.Status)
	}
	for doc, want := range map[int64]string{retried.ID: "retry bo needs_attention→pending", voided.ID: "void bo needs_attention→voided"} {
		rs, err := env.Store.Resolutions(context.Background(), doc)
		if err != nil || len(rs) != 1 || rs[0].Action+" "+rs[0].Actor+" "+string(rs[0].FromStatus)+"→"+string(rs[0].ToStatus) != want || rs[0].Reason == "" {
			t.Fatalf("resolutions of %d: %+v, %v; want %s", doc, rs, err, want)
		}
	}
	if keys := env.Outbox(t); len(keys) != 0 {
		t.Fatalf("outbox %v: retry and void announce nothing", keys)
	}
}
