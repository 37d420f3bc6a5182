package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// TestOnceflowctlAgainstTheStack runs the operator CLI against a running
// pipeline: status shows one authorized document, the listings and an audit
// work, and the exit codes tell a refusal from an unreachable service.
func TestOnceflowctlAgainstTheStack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := startStack(ctx, t, stack.Options{Reconciler: true})
	payment, err := s.Pay(ctx, fmt.Sprintf("ctl-%d", time.Now().UnixNano()), 50000)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAuthorized(ctx, "payment:"+payment, time.Minute); err != nil {
		t.Fatal(err)
	}
	ctl := ctlRunner(ctx, t, s)

	out, code := ctl("status", "--check")
	if code != 0 || !hasRow(out, "invoicer", "documents authorized", "1") || !hasRow(out, "ingest", "receipts done", "1") || !hasRow(out, "relay", "ingest.outbox parked", "0") {
		t.Fatalf("status --check exited %d:\n%s", code, out)
	}
	out, code = ctl("status", "--json")
	var st struct {
		Invoicer struct{ Documents map[string]int } `json:"invoicer"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Invoicer.Documents["authorized"] != 1 {
		t.Fatalf("status --json exited %d (%v):\n%s", code, err, out)
	}
	if out, code = ctl("documents", "list", "--status", "authorized"); code != 0 || !strings.Contains(out, "payment:"+payment) {
		t.Fatalf("documents list exited %d:\n%s", code, out)
	}
	if out, code = ctl("audit"); code != 0 || !strings.Contains(out, "REPUBLISHED") {
		t.Fatalf("audit exited %d:\n%s", code, out)
	}
	if out, code = ctl("receipts", "retry", "999999"); code != 1 || !strings.Contains(out, "not_retryable") {
		t.Fatalf("retry of an unknown receipt exited %d, want 1:\n%s", code, out)
	}
	if out, code = ctl("documents", "resolve", "1", "--action", "void"); code != 2 || !strings.Contains(out, "--actor") {
		t.Fatalf("resolve without --actor exited %d, want 2:\n%s", code, out)
	}
	checkCtlReveals(ctx, t, s, ctl)
	if out, code = ctl("status", "--ingest-url", "http://127.0.0.1:1"); code != 3 || !strings.Contains(out, "unreachable") {
		t.Fatalf("status with ingest unreachable exited %d, want 3:\n%s", code, out)
	}
}

// checkCtlReveals reveals a customer at ingest's admin API and reads the
// record back with onceflowctl reveals: who, why and which customer, and
// none of the customer's data.
func checkCtlReveals(ctx context.Context, t *testing.T, s *stack.Stack, ctl func(args ...string) (string, int)) {
	t.Helper()
	var customer struct {
		ID string `json:"id"`
	}
	err := s.API(ctx, s.IngestURL, "/v1/customers", map[string]any{
		"doc_type": "CI", "doc_country": "UY", "doc_number": "19119365", "legal_name": "Revealed Buyer",
		"address": "Av. 18 de Julio 1000", "city": "Montevideo", "department": "Montevideo", "country": "UY",
		"email": "revealed@example.com",
	}, "", &customer)
	if err != nil {
		t.Fatal(err)
	}
	req := map[string]string{"actor": "ana", "reason": "buyer asked for a copy"}
	if err := s.Admin(ctx, s.AdminURL("ingest-1"), http.MethodPost, "/admin/customers/"+customer.ID+"/reveal", req, nil); err != nil {
		t.Fatal(err)
	}
	out, code := ctl("reveals")
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), " ingest customer:"+customer.ID+" ana buyer asked for a copy") {
		t.Fatalf("reveals exited %d, want ana's reveal of customer %s listed:\n%s", code, customer.ID, out)
	}
	for _, pd := range []string{"Revealed Buyer", "19119365", "revealed@example.com"} {
		if strings.Contains(out, pd) {
			t.Fatalf("reveals lists personal data %q:\n%s", pd, out)
		}
	}
	if out, code = ctl("reveals", "--limit", "0"); code != 2 || !strings.Contains(out, "--limit") {
		t.Fatalf("reveals --limit 0 exited %d, want 2 naming the flag:\n%s", code, out)
	}
}

// ctlRunner returns a function that runs onceflowctl against s and returns
// its output and exit code.
func ctlRunner(ctx context.Context, t *testing.T, s *stack.Stack) func(args ...string) (string, int) {
	return func(args ...string) (string, int) {
		cmd := exec.CommandContext(ctx, filepath.Join(s.Dir, "onceflowctl"), args...)
		cmd.Env = []string{"ONCEFLOW_ADMIN_TOKEN=" + stack.AdminToken, "ONCEFLOW_INGEST_URL=" + s.AdminURL("ingest-1"),
			"ONCEFLOW_RELAY_URL=" + s.AdminURL("relay-1"), "ONCEFLOW_INVOICER_URL=" + s.AdminURL("invoicer-1"), "ONCEFLOW_RECONCILER_URL=" + s.AdminURL("reconciler-1")}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatalf("onceflowctl %v: %v", args, err)
		}
		return string(out), 0
	}
}

// hasRow reports whether out has a table row with these cells in order.
func hasRow(out string, cells ...string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(cells, " ") || strings.HasPrefix(strings.Join(strings.Fields(line), " "), strings.Join(cells, " ")+" ") {
			return true
		}
	}
	return false
}

// TestRunbookCommandsRunAsWritten runs every onceflowctl command of
// docs/runbook.md against a running pipeline: each is accepted (exit 0, or
// 1 when the service refuses the example id), none is a usage error or
// unreachable.
func TestRunbookCommandsRunAsWritten(t *testing.T) {
	root, err := stack.Root()
	if err != nil {
		t.Fatal(err)
	}
	book, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	var commands [][]string
	for line := range strings.SplitSeq(string(book), "\n") {
		if args, ok := strings.CutPrefix(strings.TrimSpace(line), "onceflowctl "); ok {
			commands = append(commands, shellWords(t, args))
		}
	}
	if len(commands) < 10 {
		t.Fatalf("found %d onceflowctl commands in the runbook, want its examples", len(commands))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := stack.StartWith(ctx, t.TempDir(), stack.Options{Reconciler: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctl := ctlRunner(ctx, t, s)
	for _, args := range commands {
		out, code := ctl(args...)
		if code != 0 && code != 1 {
			t.Errorf("onceflowctl %s exited %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// shellWords splits a command line on spaces, keeping "double-quoted" words
// whole and dropping a trailing # comment.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	var words []string
	for i, part := range strings.Split(line, `"`) {
		if i%2 == 1 {
			words = append(words, part)
			continue
		}
		words = append(words, strings.Fields(part)...)
	}
	return words
}
