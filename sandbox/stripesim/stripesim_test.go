package stripesim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/sandbox/internal/notifier"
	"github.com/onceflow/onceflow/sandbox/internal/simtest"
	"github.com/onceflow/onceflow/sandbox/stripesim"
)

const secret = "whsec_stripesim_test_secret"

// received is one verified event: its id, type and PaymentIntent status.
type received struct{ id, typ, status string }

// receiver verifies each event's signature as ingest would and keeps it.
type receiver struct {
	mu  sync.Mutex
	got []received
	url string
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), secret,
			webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
		if err != nil {
			t.Errorf("event refused: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.got = append(rc.got, received{ev.ID, string(ev.Type), status(ev.Data.Raw)})
		rc.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL
	return rc
}

func status(raw json.RawMessage) string {
	var o struct{ Status string }
	_ = json.Unmarshal(raw, &o)
	return o.Status
}

func (rc *receiver) events() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func start(t *testing.T, f notifier.Faults) (*receiver, string) {
	rc := newReceiver(t)
	sim := stripesim.New(stripesim.Config{APIKey: "sk_test", WebhookSecret: secret, NotifyURL: rc.url, Faults: f})
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { srv.Close(); sim.Close() })
	return rc, srv.URL
}

func pay(t *testing.T, base string) {
	simtest.Post(t, base+"/sandbox/payment_intents", map[string]any{"amount": 1000, "currency": "UYU", "order_id": "o-1"})
}

// A payment pending first is processing, then succeeded PendingFor later;
// a stale processing snapshot follows the succeeded one. Every event is
// signed as Stripe signs. Each goes with its own random delay, so they
// arrive in no fixed order: three events, two of them processing.
func TestPendingFirstThenStale(t *testing.T) {
	t.Parallel()
	rc, base := start(t, notifier.Faults{PendingFirstRate: 1, PendingFor: 10 * time.Millisecond, StaleRate: 1, DelayMax: 20 * time.Millisecond})
	pay(t, base)
	testwait.Until(t, 5*time.Second, 5*time.Millisecond, "three events", func() bool { return len(rc.events()) == 3 })
	got := rc.events()
	n := map[string]int{}
	for _, e := range got {
		n[e.typ+"/"+e.status]++
	}
	if n["payment_intent.processing/processing"] != 2 || n["payment_intent.succeeded/succeeded"] != 1 {
		t.Fatalf("events = %+v, want processing, succeeded and a stale processing", got)
	}
}

// A duplicated event arrives under one event id, the key Stripe's
// receivers dedupe on.
func TestDuplicatesShareTheEventID(t *testing.T) {
	t.Parallel()
	rc, base := start(t, notifier.Faults{DuplicateRate: 1, MaxCopies: 2})
	pay(t, base)
	testwait.Until(t, 5*time.Second, 5*time.Millisecond, "two copies", func() bool { return len(rc.events()) == 2 })
	if got := rc.events(); got[0].id != got[1].id || got[0].typ != "payment_intent.succeeded" {
		t.Fatalf("copies = %+v, want one succeeded event twice", got)
	}
}
