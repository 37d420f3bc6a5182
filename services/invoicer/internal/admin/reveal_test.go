package admin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/onceflow/onceflow/pkg/cases"
)

// Revealing a case's evidence needs an actor and a reason, and leaves a
// record in invoicer.reveals naming both and the case (not the evidence),
// listed by GET /admin/reveals; a refused reveal records nothing.
func TestCaseRevealIsRecorded(t *testing.T) {
	t.Parallel()
	k := newCaseKit(t)
	if _, err := k.env.Pool.Exec(context.Background(), `INSERT INTO invoicer.cases (kind, subject, evidence)
VALUES ('needs_attention', 'document:reveal', '{"reason":"test"}')`); err != nil {
		t.Fatal(err)
	}
	open := k.theCase(t, cases.NeedsAttention)
	if code := k.call(t, http.MethodPost, "/admin/cases/"+open.ID+"/reveal", `{"actor":"ana"}`, nil); code != http.StatusBadRequest {
		t.Fatalf("reveal without a reason: %d, want 400", code)
	}
	var got cases.View
	if code := k.call(t, http.MethodPost, "/admin/cases/"+open.ID+"/reveal", `{"actor":"ana","reason":"checking the buyer"}`, &got); code != http.StatusOK || got.ID != open.ID {
		t.Fatalf("reveal: %d %+v, want the case", code, got)
	}
	var page struct {
		Reveals []struct{ Service, Subject, Actor, Reason string }
	}
	if code := k.call(t, http.MethodGet, "/admin/reveals", "", &page); code != http.StatusOK || len(page.Reveals) != 1 {
		t.Fatalf("GET /admin/reveals: %d %+v, want the one reveal", code, page)
	}
	if r := page.Reveals[0]; r.Service != "invoicer" || r.Subject != "case:"+open.ID || r.Actor != "ana" || r.Reason != "checking the buyer" {
		t.Errorf("recorded %+v, want ana's reveal of %s with her reason", r, open.ID)
	}
	var cols int
	if err := k.env.Pool.QueryRow(context.Background(), `SELECT count(*) FROM information_schema.columns
WHERE table_schema = 'invoicer' AND table_name = 'reveals'`).Scan(&cols); err != nil || cols != 5 {
		t.Errorf("invoicer.reveals has %d columns (%v), want id, subject, actor, reason and revealed_at only", cols, err)
	}
}
