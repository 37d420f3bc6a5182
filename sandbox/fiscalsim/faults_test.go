package fiscalsim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/sandbox/fiscalsim"
)

// putRule sets a fault rule through the HTTP control endpoint.
func putRule(tb testing.TB, base, ref, body string) int {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPut, base+"/sandbox/faults/"+ref, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestFaultRules(t *testing.T) {
	t.Parallel()
	d := doc{typ: 101, ref: ref, date: "2026-11-30"}
	t.Run("5xx before acting stores nothing, then the next emission works", func(t *testing.T) {
		t.Parallel()
		srv, base := start(t)
		if code := putRule(t, base, ref, `{"fail_before":1}`); code != http.StatusOK {
			t.Fatalf("PUT rule: %d", code)
		}
		if status, _ := postSOAP(t, base+"/InvoiCy/aws_emissionfactura.aspx", emitEnvelope(goodAuth(), d.cfeXML())); status != http.StatusServiceUnavailable {
			t.Fatalf("first emission: HTTP %d, want 503", status)
		}
		if n := srv.CountByReference(ref); n != 0 {
			t.Fatalf("after a 503, %d documents stored, want 0", n)
		}
		emit(t, base, d)
		if n := srv.CountByReference(ref); n != 1 {
			t.Fatalf("%d documents, want 1", n)
		}
	})
	t.Run("duplicate stores two documents under one reference", func(t *testing.T) {
		t.Parallel()
		srv, base := start(t)
		srv.SetRule(fiscalsim.AnyReference, fiscalsim.Rule{Duplicate: true})
		ret := call(t, base+"/InvoiCy/aws_emissionfactura.aspx", emitEnvelope(goodAuth(), d.cfeXML()))
		if len(ret.CFEs) != 2 || srv.CountByReference(ref) != 2 || query(t, base, byReference(ref)).CFEs[1].CFENro != 2 {
			t.Fatalf("answer %+v, %d stored; want two numbers under one reference", ret.CFEs, srv.CountByReference(ref))
		}
	})
	t.Run("rejection", func(t *testing.T) {
		t.Parallel()
		srv, base := start(t)
		srv.SetRule(ref, fiscalsim.Rule{Reject: true})
		if got := emit(t, base, d); got.CFEStatus != 3 {
			t.Fatalf("CFEStatus %d, want 3", got.CFEStatus)
		}
	})
	t.Run("a wrong answer describes another document; the query what is stored", func(t *testing.T) {
		t.Parallel()
		srv, base := start(t)
		srv.SetRule(ref, fiscalsim.Rule{WrongAnswer: fiscalsim.WrongType})
		if got := emit(t, base, d); got.CFETipo != 102 {
			t.Fatalf("answer CFETipo %d, want 102", got.CFETipo)
		}
		if got := query(t, base, byReference(ref)).CFEs[0]; got.CFETipo != 101 {
			t.Fatalf("query CFETipo %d, want the stored 101", got.CFETipo)
		}
		if code := putRule(t, base, ref, `{"wrong_answer":"colour"}`); code != http.StatusBadRequest {
			t.Fatalf("PUT an unknown wrong_answer: %d, want 400", code)
		}
	})
	t.Run("DGI pending for two polls, then authorized", func(t *testing.T) {
		t.Parallel()
		srv, base := start(t)
		srv.SetRule(ref, fiscalsim.Rule{PendingPolls: 2})
		var got []int
		got = append(got, emit(t, base, d).CFEStatus)
		for range 3 {
			got = append(got, query(t, base, byReference(ref)).CFEs[0].CFEStatus)
		}
		if want := []int{4, 4, 5, 5}; !equal(got, want) {
			t.Fatalf("statuses %v, want %v", got, want)
		}
	})
	t.Run("timeout after commit", func(t *testing.T) {
		t.Parallel()
		srv, base := start(t)
		srv.SetRule(ref, fiscalsim.Rule{HangAfterCommit: 1})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/InvoiCy/aws_emissionfactura.aspx", strings.NewReader(emitEnvelope(goodAuth(), d.cfeXML())))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("answered HTTP %d, want the client to time out", resp.StatusCode)
		}
		if n := srv.CountByReference(ref); n != 1 {
			t.Fatalf("%d documents stored, want 1", n)
		}
	})
	t.Run("bad rule is a 400", func(t *testing.T) {
		t.Parallel()
		_, base := start(t)
		if code := putRule(t, base, ref, `{"fail_befor":1}`); code != http.StatusBadRequest {
			t.Fatalf("PUT unknown field: %d, want 400", code)
		}
		if code := putRule(t, base, "abc", `{}`); code != http.StatusBadRequest {
			t.Fatalf("PUT bad reference: %d, want 400", code)
		}
	})
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWebhookOnStatusChange(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			t.Errorf("signature: %v", err)
		}
		var ev struct {
			CreatedAt string `json:"created_at"`
			Data      struct{ Reference, Status string }
		}
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		if _, err := time.Parse(time.RFC3339, ev.CreatedAt); err != nil || !strings.HasPrefix(r.Header.Get("webhook-id"), "evt_") ||
			!strings.Contains(string(body), `"type":"document.status_changed"`) {
			t.Errorf("headers %v body %s", r.Header, body)
		}
		got <- ev.Data.Reference + ":" + ev.Data.Status
	}))
	defer hook.Close()
	srv := fiscalsim.New(fiscalsim.Config{EmpCodigo: testCodigo, EmpPK: testPK, AccessKey: testKey, Now: fixedNow,
		Logger: zaptest.NewLogger(t), Webhook: fiscalsim.Webhook{URL: hook.URL, Secret: secret}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	srv.SetRule(ref, fiscalsim.Rule{PendingPolls: 1})
	emit(t, hs.URL, doc{typ: 101, ref: ref, date: "2026-11-30"})
	query(t, hs.URL, byReference(ref))
	seen := map[string]bool{}
	for range 2 {
		seen[<-got] = true
	}
	if !seen[ref+":4"] || !seen[ref+":5"] {
		t.Fatalf("webhooks %v, want status 4 then 5 for %s", seen, ref)
	}
}
