package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// intakeSources is a plain source and one limited to two deliveries, then
// one every 1000 s.
const intakeSources = `
sources:
  - {name: plain, kind: generic, scheme: hmac_sha256, header: X-Signature, secrets: [` + plainSecret + `]}
  - {name: limited, kind: generic, scheme: hmac_sha256, header: X-Signature, secrets: [` + plainSecret + `], rate_per_second: 0.001, burst: 2}
`

func startIntake(t testing.TB, extra ...string) *env {
	path := filepath.Join(t.TempDir(), "sources.yaml")
	if err := os.WriteFile(path, []byte(intakeSources), 0o600); err != nil {
		t.Fatal(err)
	}
	return start(t, append([]string{"INGEST_WEBHOOK_SOURCES_FILE", path}, extra...)...)
}

// post sends a delivery and returns the answer's status, Retry-After and
// body.
func (e *env) postWebhook(source string, body []byte, h http.Header) (int, string, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.ingest+"/webhooks/"+source, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(got)
}

// Slow uploads holding every slot make the next delivery, once its wait
// for a slot is over, a 503 with Retry-After and a JSON error, before its
// body is read; once they end, a valid delivery is accepted again. The
// probe goes only once the in-flight gauge says both uploads hold their
// slot: probing while they arrive could take a slot from under the second
// one, which would then be the one refused.
func TestWebhooksInFlightAreBounded(t *testing.T) {
	t.Parallel()
	e := startIntake(t, "INGEST_WEBHOOK_MAX_IN_FLIGHT", "2", "INGEST_WEBHOOK_ADMISSION_WAIT", "50ms")
	writers, done := e.holdSlots(2)
	code, retry, body := e.postWebhook("plain", []byte(`{"id":"probe"}`), nil)
	if code != http.StatusServiceUnavailable || retry != "1" || !strings.Contains(body, `"code":"busy"`) {
		t.Fatalf("full intake answered %d, Retry-After %q, body %s; want 503, 1 and a JSON error with code busy", code, retry, body)
	}
	for _, w := range writers {
		_ = w.Close()
	}
	<-done
	<-done
	valid := []byte(`{"id":"after-the-storm"}`)
	if code, _, got := e.postWebhook("plain", valid, plainSigned(valid, plainSecret)); code != http.StatusOK || !strings.Contains(got, "accepted") {
		t.Fatalf("after the slow uploads ended: %d %s, want 200 accepted", code, got)
	}
}

// holdSlots starts n uploads that send the start of a body and stall,
// and waits until they hold n slots of the intake. Closing the returned
// writers ends them; done receives once per upload answered.
func (e *env) holdSlots(n int) (writers []*io.PipeWriter, done chan struct{}) {
	e.t.Helper()
	done = make(chan struct{}, n)
	for range n {
		r, w := io.Pipe()
		writers = append(writers, w)
		req, _ := http.NewRequest(http.MethodPost, e.ingest+"/webhooks/plain", r)
		req.Header.Set("Content-Type", "application/json")
		go func() {
			if resp, err := e.client.Do(req); err == nil {
				resp.Body.Close()
			}
			done <- struct{}{}
		}()
		go func() { _, _ = w.Write([]byte(`{"id":"slow",`)) }() // then nothing, until closed
	}
	testwait.Until(e.t, 10*time.Second, 10*time.Millisecond, "the slow uploads to fill the intake", func() bool {
		return e.gauge("onceflow_ingest_webhooks_in_flight") == float64(n)
	})
	return writers, done
}

// answer is one delivery's status and body.
type answer struct {
	code int
	body string
}

// postAsync posts a signed delivery of id in the background.
func (e *env) postAsync(id string) <-chan answer {
	out := make(chan answer, 1)
	body := []byte(`{"id":"` + id + `"}`)
	go func() {
		code, _, got := e.postWebhook("plain", body, plainSigned(body, plainSecret))
		out <- answer{code, got}
	}()
	return out
}

// A delivery that finds every slot taken waits for one
// (INGEST_WEBHOOK_ADMISSION_WAIT) and is accepted once it frees, instead
// of being refused for its sender to retry minutes later.
func TestADeliveryWaitsForASlot(t *testing.T) {
	t.Parallel()
	e := startIntake(t, "INGEST_WEBHOOK_MAX_IN_FLIGHT", "1", "INGEST_WEBHOOK_ADMISSION_WAIT", "10s")
	writers, done := e.holdSlots(1)
	waiting := e.postAsync("waited")
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, "the delivery to wait for a slot", func() bool {
		return e.gauge("onceflow_ingest_webhooks_waiting") == 1
	})
	_ = writers[0].Close()
	<-done
	if a := <-waiting; a.code != http.StatusOK || !strings.Contains(a.body, "accepted") {
		t.Fatalf("the waiting delivery: %d %s, want 200 accepted once the slot freed", a.code, a.body)
	}
}

// At most four deliveries per slot wait; the next is refused busy at once,
// and those waiting are accepted as the slot frees.
func TestDeliveriesWaitingAreBounded(t *testing.T) {
	t.Parallel()
	e := startIntake(t, "INGEST_WEBHOOK_MAX_IN_FLIGHT", "1", "INGEST_WEBHOOK_ADMISSION_WAIT", "10s")
	writers, done := e.holdSlots(1)
	var waiting []<-chan answer
	for i := range webhook.WaitingPerSlot {
		waiting = append(waiting, e.postAsync(fmt.Sprintf("waiting-%d", i)))
	}
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, "four deliveries to wait for the slot", func() bool {
		return e.gauge("onceflow_ingest_webhooks_waiting") == webhook.WaitingPerSlot
	})
	extra := e.postAsync("one-too-many")
	var refused answer
	testwait.Until(t, 10*time.Second, 10*time.Millisecond, "the fifth delivery to be answered or to wait", func() bool {
		select {
		case refused = <-extra:
			return true
		default:
			return e.gauge("onceflow_ingest_webhooks_waiting") > webhook.WaitingPerSlot
		}
	})
	if refused.code != http.StatusServiceUnavailable || !strings.Contains(refused.body, `"code":"busy"`) {
		t.Fatalf("with %d deliveries waiting, the next: %d %q (waiting now %v); want 503 busy at once",
			webhook.WaitingPerSlot, refused.code, refused.body, e.gauge("onceflow_ingest_webhooks_waiting"))
	}
	_ = writers[0].Close()
	<-done
	for i, w := range waiting {
		if a := <-w; a.code != http.StatusOK {
			t.Errorf("waiting delivery %d: %d %s, want 200", i, a.code, a.body)
		}
	}
}

// A source over its rate limit answers 429 with Retry-After; others are
// not affected.
func TestWebhookSourceRateLimit(t *testing.T) {
	t.Parallel()
	e := startIntake(t)
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		body := []byte(`{"id":"r-` + string(rune('a'+i)) + `"}`)
		code, retry, got := e.postWebhook("limited", body, plainSigned(body, plainSecret))
		if code != want || (want == http.StatusTooManyRequests && (retry != "1" || !strings.Contains(got, `"code":"rate_limited"`))) {
			t.Fatalf("delivery %d: %d (Retry-After %q) %s, want %d", i+1, code, retry, got, want)
		}
	}
	body := []byte(`{"id":"other-source"}`)
	if code, _, got := e.postWebhook("plain", body, plainSigned(body, plainSecret)); code != http.StatusOK {
		t.Fatalf("another source: %d %s, want 200", code, got)
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts"); n != 3 {
		t.Fatalf("receipts = %d, want 3 (the limited delivery stored nothing)", n)
	}
}
