package mpsim_test

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/sandbox/internal/notifier"
	"github.com/onceflow/onceflow/sandbox/internal/simtest"
	"github.com/onceflow/onceflow/sandbox/mpsim"
)

const (
	token  = "TEST-token"
	secret = "mpsim-test-webhook-secret"
)

// received is one notification whose signature checked: its id, its
// action and the payment's status when it arrived.
type received struct {
	id     json.Number
	action string
	status string
}

type receiver struct {
	mu  sync.Mutex
	got []received
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// start runs the sandbox with faults, notifying a receiver that checks
// each signature and reads the payment's status back from the API.
func start(t *testing.T, f notifier.Faults) (*receiver, string) {
	rc := &receiver{}
	var base string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		dataID := r.URL.Query().Get("data.id")
		sig := map[string]string{}
		for _, part := range strings.Split(r.Header.Get("X-Signature"), ",") {
			k, v, _ := strings.Cut(part, "=")
			sig[k] = v
		}
		if sig["v1"] != mpsim.Sign(secret, dataID, r.Header.Get("X-Request-Id"), sig["ts"]) {
			t.Errorf("notification for %s badly signed", dataID)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var n struct {
			ID     json.Number `json:"id"`
			Action string      `json:"action"`
		}
		_ = json.Unmarshal(body, &n)
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/payments/"+dataID, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		var p struct{ Status string }
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
		}
		rc.mu.Lock()
		rc.got = append(rc.got, received{n.ID, n.Action, p.Status})
		rc.mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	sim := mpsim.New(mpsim.Config{AccessToken: token, WebhookSecret: secret, Faults: f})
	sim.NotifyTo(hook.URL)
	srv := httptest.NewServer(sim)
	t.Cleanup(func() { srv.Close(); sim.Close() })
	base = srv.URL
	return rc, base
}

func pay(t *testing.T, base string) {
	simtest.Post(t, base+"/sandbox/payments", map[string]any{"amount": "10.00", "currency": "UYU", "external_reference": "o-1"})
}

// A payment pending first is created in_process and approved PendingFor
// later; a stale payment.created follows the approved one. The receiver
// reads each status back when the notification arrives, and a loaded
// machine may deliver the first after the approval, so the order is taken
// from the notification ids (given as each is sent) and the first status
// from the creation's answer.
func TestPendingFirstThenStale(t *testing.T) {
	t.Parallel()
	rc, base := start(t, notifier.Faults{PendingFirstRate: 1, PendingFor: 50 * time.Millisecond, StaleRate: 1, DelayMax: 20 * time.Millisecond})
	var created struct{ Status string }
	if err := json.Unmarshal(simtest.Post(t, base+"/sandbox/payments", map[string]any{"amount": "10.00", "currency": "UYU", "external_reference": "o-1"}), &created); err != nil || created.Status != "in_process" {
		t.Fatalf("created %+v (%v), want in_process", created, err)
	}
	testwait.Until(t, 5*time.Second, 5*time.Millisecond, "three notifications", func() bool { return len(rc.all()) == 3 })
	got := rc.all()
	slices.SortFunc(got, func(a, b received) int {
		x, _ := a.id.Int64()
		y, _ := b.id.Int64()
		return cmp.Compare(x, y)
	})
	want := []string{"payment.created", "payment.updated/approved", "payment.created/approved"}
	for i, w := range want {
		g := got[i].action + "/" + got[i].status
		if i == 0 {
			g = got[i].action // read back after PendingFor or before: either status
		}
		if g != w {
			t.Fatalf("notifications by id = %+v, want %v", got, want)
		}
	}
}

// Lost notifications never come; duplicated ones share their notification
// id, the key Mercado Pago's receivers dedupe on.
func TestLossAndDuplicates(t *testing.T) {
	t.Parallel()
	lost, base := start(t, notifier.Faults{LossRate: 1})
	pay(t, base)
	dup, base2 := start(t, notifier.Faults{DuplicateRate: 1, MaxCopies: 2})
	pay(t, base2)
	testwait.Until(t, 5*time.Second, 5*time.Millisecond, "two copies", func() bool { return len(dup.all()) == 2 })
	if got := dup.all(); got[0].id != got[1].id {
		t.Fatalf("copies = %+v, want one notification id", got)
	}
	testwait.Until(t, 5*time.Second, 5*time.Millisecond, "the loss counted", func() bool {
		var c notifier.Counts
		resp, err := http.Get(base + "/sandbox/stats")
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
		}
		return c.Lost == 1
	})
	if n := len(lost.all()); n != 0 {
		t.Fatalf("%d notifications arrived, want the one lost", n)
	}
}
