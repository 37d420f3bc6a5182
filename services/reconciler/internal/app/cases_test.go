package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/api/openapi/openapitest"
	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
)

func adminPost(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	c := openapitest.Client(t, "reconciler", nil)
	c.Timeout = 30 * time.Second
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type caseJSON struct {
	ID, Service, Kind string
	AmountMinor       *int64 `json:"amount_minor"`
	Actions           []string
}

// One place lists the cases of every schema; the reconciler resolves its
// own, and names the owner of another service's.
func TestAdminListsEveryCaseAndResolvesItsOwn(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	seed(t, db) // p-missing has no document: the first run opens its missing_document case
	db.Exec(t, `INSERT INTO ingest.cases (kind, subject, psp_payment_id, amount_minor, currency, evidence)
		VALUES ('unmatched_payment', 'payment:D-4-1', 'D-4-1', 125000, 'UYU', '{"reason":"amount_mismatch"}')`)
	db.Exec(t, `INSERT INTO invoicer.cases (kind, subject, document_id) VALUES ('document_rejected', 'document:7', 7)`)
	env := testEnv(t, db)
	env["RECONCILER_INTERVAL"] = "1h"
	env["ADMIN_TOKEN"] = "t-admin"
	addr, _ := startServe(t, env)
	testwait.Until(t, 15*time.Second, 50*time.Millisecond, "the first run", func() bool { return len(db.Runs(t)) == 1 && db.Runs(t)[0].Finished })
	base := "http://" + addr + "/admin/cases"

	list := func(query string) []caseJSON {
		t.Helper()
		code, body := adminDo(t, http.MethodGet, base+query, "t-admin")
		var out struct{ Cases []caseJSON }
		if err := json.Unmarshal([]byte(body), &out); code != http.StatusOK || err != nil {
			t.Fatalf("GET /admin/cases%s: %d %s", query, code, body)
		}
		return out.Cases
	}
	ids := func(cs []caseJSON) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.ID+":"+c.Kind)
		}
		return strings.Join(s, " ")
	}
	all := list("")
	for _, want := range []string{"ingest-1:unmatched_payment", "invoicer-1:document_rejected", "missing_document"} {
		if !strings.Contains(ids(all), want) {
			t.Errorf("open cases = %s, want %s among them", ids(all), want)
		}
	}
	if got := ids(list("?service=ingest")); got != "ingest-1:unmatched_payment" {
		t.Errorf("service=ingest = %s", got)
	}
	own := list("?kind=missing_document")
	if len(own) < 1 || own[0].Service != "reconciler" || own[0].AmountMinor == nil || strings.Join(own[0].Actions, ",") != "acknowledge" {
		t.Fatalf("missing_document cases = %+v", own)
	}
	id := own[0].ID
	if code, body := adminDo(t, http.MethodGet, base+"/"+id, "t-admin"); code != http.StatusOK || !strings.Contains(body, `"subject":"payment:p-missing"`) {
		t.Errorf("GET %s: %d %s", id, code, body)
	}
	checkReveal(t, base, id)
	for _, tc := range []struct {
		name, id, body string
		code           int
		want           string
	}{
		{"bad status", "", "", 400, "invalid_status"},
		{"bad id", "nope", `{}`, 400, "invalid_case_id"},
		{"unknown", "reconciler-999", `{"action":"acknowledge","actor":"ana","reason":"x"}`, 404, ""},
		{"no actor", id, `{"action":"acknowledge","reason":"x"}`, 400, "actor"},
		{"wrong action", id, `{"action":"reissue","actor":"ana","reason":"x"}`, 422, "wrong_action"},
		{"other service", "ingest-1", `{"action":"reapply","actor":"ana","reason":"x"}`, 422, "belongs to ingest"},
		{"acknowledge", id, `{"action":"acknowledge","actor":"ana","reason":"issued by hand"}`, 200, `"closed_by":"ana"`},
		{"again", id, `{"action":"acknowledge","actor":"ana","reason":"again"}`, 409, "case_closed"},
	} {
		var code int
		var body string
		if tc.name == "bad status" {
			code, body = adminDo(t, http.MethodGet, base+"?status=maybe", "t-admin")
		} else {
			code, body = adminPost(t, base+"/"+tc.id+"/resolve", "t-admin", tc.body)
		}
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, body, tc.code, tc.want)
		}
	}
	if got := ids(list("?status=closed")); got != id+":missing_document" {
		t.Errorf("closed cases = %s, want %s", got, id)
	}
}

// checkReveal reveals the reconciler's case id: refused without a reason
// or for another service's case, then answered and recorded (who, which
// case, why) in reconciler.reveals and GET /admin/reveals.
func checkReveal(t *testing.T, base, id string) {
	t.Helper()
	if code, body := adminPost(t, base+"/"+id+"/reveal", "t-admin", `{"actor":"ana"}`); code != http.StatusBadRequest {
		t.Errorf("reveal without a reason: %d %s, want 400", code, body)
	}
	if code, body := adminPost(t, base+"/ingest-1/reveal", "t-admin", `{"actor":"ana","reason":"x"}`); code != http.StatusUnprocessableEntity || !strings.Contains(body, "wrong_service") {
		t.Errorf("reveal of ingest's case at the reconciler: %d %s, want 422 wrong_service", code, body)
	}
	if code, body := adminPost(t, base+"/"+id+"/reveal", "t-admin", `{"actor":"ana","reason":"merchant asked"}`); code != http.StatusOK || !strings.Contains(body, `"id":"`+id+`"`) {
		t.Fatalf("reveal %s: %d %s", id, code, body)
	}
	code, body := adminDo(t, http.MethodGet, strings.TrimSuffix(base, "/cases")+"/reveals", "t-admin")
	var page struct {
		Reveals []struct{ Service, Subject, Actor, Reason string }
	}
	if err := json.Unmarshal([]byte(body), &page); code != http.StatusOK || err != nil || len(page.Reveals) != 1 {
		t.Fatalf("GET /admin/reveals: %d %s, want one reveal", code, body)
	}
	if r := page.Reveals[0]; r.Service != "reconciler" || r.Subject != "case:"+id || r.Actor != "ana" || r.Reason != "merchant asked" {
		t.Errorf("recorded %+v, want ana's reveal of %s with her reason", r, id)
	}
}
