package pspsim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/testwait"
	"github.com/onceflow/onceflow/sandbox/pspsim"
)

// statuses reads the status of each notification rc receives until e has
// settled notices notifications: each was lost on purpose or every copy of
// it was answered 2xx (rc answers 200). A copy reaches rc before its answer
// is counted, so once they are settled every copy is in rc.got: the wait
// follows e's counters, not a window of time.
func statuses(t *testing.T, e env, rc receiver, notices int) []string {
	t.Helper()
	var out []string
	settled := func() bool {
		// A notification counts 1 in Sent+Lost-Extra once settled and
		// less before, so the sum reaches notices only when all have.
		st := e.srv.Stats()
		return st.NotificationsSent+st.NotificationsLost-st.ExtraCopies == int64(notices)
	}
	testwait.Until(t, 10*time.Second, 5*time.Millisecond, fmt.Sprintf("%d notifications settled", notices), func() bool {
		done := settled() // before the drain: what it counted is in rc.got
		for {
			select {
			case n := <-rc.got:
				var p struct{ Status string }
				_ = json.Unmarshal(n.body, &p)
				out = append(out, p.Status)
			default:
				return done
			}
		}
	})
	return out
}

func TestDuplicatesAndLossFollowTheSeed(t *testing.T) {
	t.Parallel()
	run := func() (pspsim.Stats, int) {
		rc := newReceiver(t)
		e := start(t, pspsim.Config{Faults: pspsim.Faults{Seed: 42, DuplicateRate: 0.5, MaxCopies: 3, LossRate: 0.2}})
		for range 40 {
			createPayment(t, e, "", rc.url)
		}
		got := len(statuses(t, e, rc, 40))
		return e.srv.Stats(), got
	}
	a, gotA := run()
	b, gotB := run()
	if a.NotificationsLost == 0 || a.ExtraCopies == 0 {
		t.Fatalf("stats = %+v, want some lost and some extra copies", a)
	}
	if want := 40 - int(a.NotificationsLost) + int(a.ExtraCopies); gotA != want {
		t.Fatalf("received %d notifications, want 40 - %d lost + %d extra = %d", gotA, a.NotificationsLost, a.ExtraCopies, want)
	}
	if a.NotificationsLost != b.NotificationsLost || a.ExtraCopies != b.ExtraCopies || gotA != gotB {
		t.Fatalf("same seed, different runs: %+v (%d) vs %+v (%d)", a, gotA, b, gotB)
	}
}

func TestStalePendingArrivesAfterPaid(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	e := start(t, pspsim.Config{Faults: pspsim.Faults{StaleRate: 1, DelayMax: 20 * time.Millisecond}})
	createPayment(t, e, "", rc.url)
	got := statuses(t, e, rc, 2) // the paid one and the stale one
	if len(got) != 2 || got[0] != "PAID" || got[1] != "PENDING" {
		t.Fatalf("notifications = %v, want PAID then a stale PENDING", got)
	}
	// The authoritative state stays PAID.
	status, p := call(t, http.MethodGet, e.url+"/payments/"+firstID(t, e), "")
	if status != http.StatusOK || p["status"] != "PAID" {
		t.Fatalf("GET payment = %d %v", status, p["status"])
	}
}

func TestPendingFirstTurnsPaidLater(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t)
	e := start(t, pspsim.Config{Faults: pspsim.Faults{PendingFirstRate: 1, PendingFor: 50 * time.Millisecond}})
	id := createPayment(t, e, "", rc.url)
	if got := statuses(t, e, rc, 2); len(got) != 2 || got[0] != "PENDING" || got[1] != "PAID" {
		t.Fatalf("notifications = %v, want PENDING then PAID", got)
	}
	if _, p := call(t, http.MethodGet, e.url+"/payments/"+id, ""); p["status"] != "PAID" {
		t.Fatalf("status = %v, want PAID", p["status"])
	}
}

func TestRetriesFollowDLocalScheduleScaled(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError)
	// An hour becomes 50 ms: the two retries come about 50 ms apart.
	e := start(t, pspsim.Config{Faults: pspsim.Faults{TimeScale: 0.05 / 3600}})
	createPayment(t, e, "", rc.url)
	start := time.Now()
	rc.next(t)
	rc.next(t)
	rc.next(t)
	if took := time.Since(start); took < 90*time.Millisecond {
		t.Fatalf("three attempts took %s, want at least two scaled hours (100 ms)", took)
	}
}

// firstID returns the id of the one payment e holds.
func firstID(t *testing.T, e env) string {
	t.Helper()
	if e.srv.Stats().Payments != 1 {
		t.Fatal("want exactly one payment")
	}
	return e.srv.PaymentIDs()[0]
}
