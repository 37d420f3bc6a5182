package httpclient

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// connections counts the TCP connections a server accepts while callers
// concurrent callers make two rounds of calls through c.
func connections(t *testing.T, c *http.Client, callers int) int64 {
	t.Helper()
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	for range 2 {
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
	}
	return opened.Load()
}

func TestIdleConnectionsAreReused(t *testing.T) {
	const callers = 16
	if n := connections(t, New(0), callers); n > callers {
		t.Fatalf("%d callers, two rounds: %d connections opened, want at most %d (the second round reuses the first's)", callers, n, callers)
	}
	// Go's default keeps two: the second round opens most of its own.
	if n := connections(t, &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, callers); n <= callers {
		t.Fatalf("default transport opened %d connections for two rounds of %d; the comparison above proves nothing", n, callers)
	}
}
