package httpclient

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// barrier holds each request of a round until all callers of that round
// have arrived, so a round always has callers requests in flight at once:
// no connection is free for another caller to take before every caller
// has one, and the count of connections opened is exact, however the
// goroutines happen to be scheduled.
type barrier struct {
	mu      sync.Mutex
	callers int
	arrived int
	all     chan struct{}
}

func (b *barrier) round() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.arrived, b.all = 0, make(chan struct{})
}

func (b *barrier) wait(r *http.Request) {
	b.mu.Lock()
	all := b.all
	if b.arrived++; b.arrived == b.callers {
		close(all)
	}
	b.mu.Unlock()
	select {
	case <-all:
	case <-r.Context().Done():
	}
}

// connections counts the TCP connections a server accepts while callers
// concurrent callers make two rounds of calls through c: the first round's
// and the second's.
func connections(t *testing.T, c *http.Client, callers int) (first, second int64) {
	t.Helper()
	var opened atomic.Int64
	b := &barrier{callers: callers}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { b.wait(r) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	counts := make([]int64, 2)
	for i := range counts {
		b.round()
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				resp, err := c.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_ = resp.Body.Close()
			})
		}
		wg.Wait()
		counts[i] = opened.Load()
	}
	return counts[0], counts[1] - counts[0]
}

func TestIdleConnectionsAreReused(t *testing.T) {
	const callers = 16
	if first, second := connections(t, New(0), callers); first != callers || second != 0 {
		t.Fatalf("%d callers, two rounds: %d then %d new connections, want %d then 0 (the second round reuses the first's)", callers, first, second, callers)
	}
	// Go's default transport keeps two idle: the second round opens the rest anew.
	if first, second := connections(t, &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, callers); second != callers-2 {
		t.Fatalf("default transport: %d then %d new connections for two rounds of %d, want %d new in the second; the comparison above proves nothing", first, second, callers, callers-2)
	}
}
