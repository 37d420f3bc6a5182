// Package httpclient builds HTTP clients for calls from many goroutines to
// one service (a PSP, an e-invoicing provider, a webhook receiver).
//
// Go's default transport keeps two idle connections per host: with more
// concurrent callers than that, every call beyond the second opens a new
// TCP connection and closes it afterwards. Under load that is thousands of
// connections a second, each a handshake and a socket left in TIME_WAIT.
package httpclient

import (
	"net/http"
	"time"
)

// Idle is how many idle connections per host a Transport keeps open
// between calls. A burst with more calls in flight to one host (ingest's
// fetches of its claimed batches, the invoicer's sends without a provider
// rate limit) opens the others and closes them after use.
const Idle = 64

// Transport is Go's default transport keeping Idle connections per host.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = Idle
	t.MaxIdleConns = max(t.MaxIdleConns, Idle)
	return t
}

// New returns a client with that transport and timeout (0: none).
func New(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: Transport()}
}
