package app_test

import (
	"encoding/json"
	"github.com/onceflow/onceflow/api/openapi/openapitest"
	"github.com/onceflow/onceflow/pkg/testwait"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/services/reconciler/internal/reconcilertest"
)

func adminDo(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
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

func TestOperatorTriggersARunAndListsFindings(t *testing.T) {
	t.Parallel()
	db := reconcilertest.NewDB(t)
	seed(t, db)
	db.Exec(t, `INSERT INTO ingest.outbox (event_key, event_type, payload, parked_at, parked_reason)
		VALUES ('payment:p-parked:paid', 'billing.document_requested', '{}', now(), 'no route')`)
	env := testEnv(t, db)
	env["RECONCILER_INTERVAL"] = "1h"
	env["ADMIN_TOKEN"] = "t-admin"
	addr, _ := startServe(t, env)
	testwait.Until(t, 15*time.Second, 50*time.Millisecond, "the first run", func() bool { return len(db.Runs(t)) == 1 && db.Runs(t)[0].Finished })

	base := "http://" + addr
	if code, _ := adminDo(t, http.MethodPost, base+"/admin/runs", ""); code != http.StatusUnauthorized {
		t.Fatalf("run without the admin token: %d, want 401", code)
	}
	code, body := adminDo(t, http.MethodPost, base+"/admin/runs", "t-admin")
	var run struct {
		RunID    int64 `json:"run_id"`
		Findings int   `json:"findings"`
	}
	if err := json.Unmarshal([]byte(body), &run); code != http.StatusOK || err != nil || run.RunID != 2 || run.Findings != 1 {
		t.Fatalf("triggered run: %d %s, want run 2 with 1 finding", code, body)
	}
	code, body = adminDo(t, http.MethodGet, base+"/admin/findings?kind=outbox_parked", "t-admin")
	if code != http.StatusOK || !strings.Contains(body, `"reference":"ingest.outbox:payment:p-parked:paid"`) || !strings.Contains(body, `"seen_count":2`) {
		t.Fatalf("findings: %d %s", code, body)
	}
	if code, _ := adminDo(t, http.MethodGet, base+"/admin/findings?limit=0", "t-admin"); code != http.StatusBadRequest {
		t.Fatalf("limit=0: %d, want 400", code)
	}
	// The console's board: the latest run (the one just triggered).
	code, body = adminDo(t, http.MethodGet, base+"/admin/board", "t-admin")
	var board struct {
		LastRun *struct {
			ID         int64      `json:"id"`
			FinishedAt *time.Time `json:"finished_at"`
		} `json:"last_run"`
		Cases []struct{ Kind string } `json:"cases"`
	}
	if err := json.Unmarshal([]byte(body), &board); code != http.StatusOK || err != nil || board.LastRun == nil || board.LastRun.ID != 2 || board.LastRun.FinishedAt == nil {
		t.Fatalf("board: %d %s, want run 2, finished", code, body)
	}

	table, err := runMain(env, "report")
	if err != nil {
		t.Errorf("report: %v", err)
	}
	if !strings.Contains(table, "outbox_parked") || !strings.Contains(table, "1 open findings") {
		t.Fatalf("report table:\n%s", table)
	}
	out, err := runMain(env, "report", "--json")
	if err != nil {
		t.Errorf("report --json: %v", err)
	}
	var rep struct {
		Findings []struct{ Kind, Reference string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Findings) != 1 || rep.Findings[0].Kind != "outbox_parked" {
		t.Fatalf("report --json: %v\n%s", err, out)
	}
}
