package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// e2eMerchantSecret signs the stack's deliveries to the test merchant.
const e2eMerchantSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// e2eDocument is a document as GET /v1/orders/{id} and the merchant see it.
type e2eDocument struct {
	Kind, Status, Reference string
	Series                  string
	Number                  int64
	SecurityCode            string `json:"security_code"`
	VerifyURL               string `json:"verify_url"`
	CAE                     *struct {
		ID        string `json:"id"`
		RangeFrom int64  `json:"range_from"`
		RangeTo   int64  `json:"range_to"`
		Expires   string `json:"expires"`
	} `json:"cae"`
}

// TestMerchantReceivesEveryDocumentOfAnOrder runs the whole pipeline: a
// payment and a refund become an authorized invoice and credit note at the
// fiscal sandbox; GET /v1/orders/{id} shows both with their CAE and
// verification URL; the merchant's endpoint, verifying every delivery with
// the Standard Webhooks library, receives each document's event id at least
// once (its first delivery answered 500, so it comes again) and nothing
// else.
func TestMerchantReceivesEveryDocumentOfAnOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	hook, err := standardwebhooks.NewWebhook(e2eMerchantSecret)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen, docs, bad := map[string]int{}, map[string]e2eDocument{}, 0
	merchant := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		var p struct {
			Type string
			Data struct {
				EventID  string `json:"event_id"`
				Document e2eDocument
			}
		}
		if hook.Verify(body, r.Header) != nil || json.Unmarshal(body, &p) != nil || p.Type != "document.authorized" ||
			p.Data.EventID != r.Header.Get(standardwebhooks.HeaderWebhookID) {
			bad++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		seen[p.Data.EventID]++
		docs[p.Data.EventID] = p.Data.Document
		if seen[p.Data.EventID] == 1 {
			w.WriteHeader(http.StatusInternalServerError) // the first delivery of each event fails
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer merchant.Close()
	// With the reconciler serving too: onceflowctl is given every service.
	s, err := stack.StartWith(ctx, t.TempDir(), stack.Options{Reconciler: true, Env: []string{
		"INGEST_MERCHANT_WEBHOOK_URL=" + merchant.URL, "INGEST_MERCHANT_WEBHOOK_SECRET=" + e2eMerchantSecret,
		"INGEST_MERCHANT_WEBHOOK_BACKOFF_BASE=100ms", "INGEST_MERCHANT_WEBHOOK_BACKOFF_CAP=500ms",
		"INGEST_MERCHANT_WEBHOOK_POLL_INTERVAL=200ms",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	defer dumpLogsOnFailure(t, s)

	merchantOrder := fmt.Sprintf("e2e-notify-%d", time.Now().UnixNano())
	payment, err := s.Pay(ctx, merchantOrder, 122000)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAuthorized(ctx, "payment:"+payment, time.Minute); err != nil {
		t.Fatal(err)
	}
	refund, err := s.Refund(ctx, payment, 20000)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAuthorized(ctx, "refund:"+refund, time.Minute); err != nil {
		t.Fatal(err)
	}
	orderID := findOrder(ctx, t, s, merchantOrder)

	var order struct {
		Invoice     *e2eDocument
		CreditNotes []e2eDocument `json:"credit_notes"`
	}
	err = stack.WaitFor(ctx, time.Minute, func() (bool, error) {
		err := s.Get(ctx, s.IngestURL, "/v1/orders/"+orderID, &order)
		return err == nil && order.Invoice != nil && order.Invoice.Status == "authorized" &&
			len(order.CreditNotes) == 1 && order.CreditNotes[0].Status == "authorized", fmt.Errorf("order %+v: %v", order, err)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]e2eDocument{*order.Invoice}, order.CreditNotes...) {
		if d.CAE == nil || d.CAE.ID == "" || d.CAE.RangeTo < d.Number || d.CAE.Expires == "" || d.VerifyURL == "" ||
			d.SecurityCode == "" || d.Series == "" || d.Number < 1 {
			t.Fatalf("GET /v1/orders/%s shows %s %+v without its CAE, number or verification URL", orderID, d.Kind, d)
		}
	}
	want := []string{"document:" + order.Invoice.Reference + ":authorized", "document:" + order.CreditNotes[0].Reference + ":authorized"}
	err = stack.WaitFor(ctx, time.Minute, func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return seen[want[0]] >= 2 && seen[want[1]] >= 2, fmt.Errorf("merchant saw %v", seen)
	})
	if err != nil {
		t.Fatal(err)
	}
	replayWithCtl(ctx, t, s, want[0])
	err = stack.WaitFor(ctx, time.Minute, func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return seen[want[0]] >= 3, fmt.Errorf("merchant saw %v", seen)
	})
	if err != nil {
		t.Fatalf("the replayed notification did not arrive again: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := slices.Sorted(maps.Keys(seen)); bad != 0 || !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("merchant saw events %v and %d bad deliveries, want exactly %v, all verified", got, bad, want)
	}
	if d := docs[want[0]]; d.VerifyURL != order.Invoice.VerifyURL || d.CAE == nil || d.CAE.ID != order.Invoice.CAE.ID {
		t.Fatalf("the merchant's invoice %+v differs from the order's %+v", d, *order.Invoice)
	}
}

// replayWithCtl finds the delivered notification of event with onceflowctl
// and replays it.
func replayWithCtl(ctx context.Context, t *testing.T, s *stack.Stack, event string) {
	t.Helper()
	ctl := ctlRunner(ctx, t, s)
	var id int64
	err := stack.WaitFor(ctx, 30*time.Second, func() (bool, error) {
		out, code := ctl("notifications", "list", "--status", "delivered", "--json")
		var page struct {
			Notifications []struct {
				ID      int64  `json:"id"`
				EventID string `json:"event_id"`
			} `json:"notifications"`
		}
		if err := json.Unmarshal([]byte(out), &page); code != 0 || err != nil {
			return false, fmt.Errorf("exit %d (%v): %s", code, err, out)
		}
		for _, n := range page.Notifications {
			if n.EventID == event {
				id = n.ID
			}
		}
		return id != 0, fmt.Errorf("%s not delivered yet: %s", event, out)
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, code := ctl("notifications", "replay", fmt.Sprint(id)); code != 2 || !strings.Contains(out, "--actor") {
		t.Fatalf("replay without --actor exited %d, want 2:\n%s", code, out)
	}
	if out, code := ctl("notifications", "replay", fmt.Sprint(id), "--actor", "e2e", "--reason", "merchant asked again"); code != 0 {
		t.Fatalf("replay exited %d:\n%s", code, out)
	}
}

// findOrder returns the id of the order with merchant order id m.
func findOrder(ctx context.Context, t *testing.T, s *stack.Stack, m string) string {
	t.Helper()
	var page struct {
		Orders []struct {
			ID              string `json:"id"`
			MerchantOrderID string `json:"merchant_order_id"`
		} `json:"orders"`
	}
	if err := s.Get(ctx, s.IngestURL, "/v1/orders?limit=100", &page); err != nil {
		t.Fatal(err)
	}
	for _, o := range page.Orders {
		if o.MerchantOrderID == m {
			return o.ID
		}
	}
	t.Fatalf("order %s not listed: %+v", m, page)
	return ""
}

// TestNotificationSurvivesKillNine: ingest is killed (SIGKILL) while the
// merchant is answering its first delivery, so the merchant's 2xx is never
// saved; restarted, ingest sends the event again, under the same
// webhook-id, once the dead deliverer's lease has expired.
func TestNotificationSurvivesKillNine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	hook, err := standardwebhooks.NewWebhook(e2eMerchantSecret)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		seen    []string // webhook-id of each verified delivery
		running atomic.Pointer[stack.Stack]
		kills   = make(chan error, 1)
	)
	merchant := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if hook.Verify(body, r.Header) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, r.Header.Get(standardwebhooks.HeaderWebhookID))
		first := len(seen) == 1
		mu.Unlock()
		if first {
			kills <- running.Load().Kill("ingest-1") // before the 2xx reaches it
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer merchant.Close()
	s, err := stack.StartWith(ctx, t.TempDir(), stack.Options{Env: []string{
		"INGEST_MERCHANT_WEBHOOK_URL=" + merchant.URL, "INGEST_MERCHANT_WEBHOOK_SECRET=" + e2eMerchantSecret,
		"INGEST_MERCHANT_WEBHOOK_TIMEOUT=1s", "INGEST_MERCHANT_WEBHOOK_POLL_INTERVAL=200ms", // a 15 s lease
	}})
	if err != nil {
		t.Fatal(err)
	}
	running.Store(s)
	defer s.Stop()
	defer dumpLogsOnFailure(t, s)

	payment, err := s.Pay(ctx, fmt.Sprintf("e2e-kill-%d", time.Now().UnixNano()), 122000)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAuthorized(ctx, "payment:"+payment, time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-kills:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the merchant never got the first delivery")
	}
	if err := s.Restart(ctx, "ingest-1"); err != nil {
		t.Fatal(err)
	}
	err = stack.WaitFor(ctx, time.Minute, func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 2, fmt.Errorf("merchant saw %v", seen)
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[0] != seen[1] || !strings.HasPrefix(seen[0], "document:") {
		t.Fatalf("deliveries %v, want the same event id again after the crash", seen)
	}
}
