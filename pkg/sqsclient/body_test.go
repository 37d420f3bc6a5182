package sqsclient

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// sdkBody behaves as the SDK's request body: the SDK closes it once the
// response headers are in, and from then on its WriteTo answers io.EOF.
// WriteTo waits for that close, as net/http's writer goroutine does when
// it gets no CPU before the server has answered.
type sdkBody struct {
	r      *bytes.Reader
	once   sync.Once
	closed chan struct{}
}

func newSDKBody(p []byte) *sdkBody {
	return &sdkBody{r: bytes.NewReader(p), closed: make(chan struct{})}
}

func (b *sdkBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *sdkBody) WriteTo(io.Writer) (int64, error) {
	<-b.closed
	return 0, io.EOF
}

func (b *sdkBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// watchedConn reports its Close on closed.
type watchedConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *watchedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// client returns an HTTP client whose connections report their Close on
// the channel it returns (one connection: the test sends one request).
func client(t *testing.T) (*http.Client, chan struct{}) {
	closed := make(chan struct{})
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, closed: closed}, nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, closed
}

// call sends a request with an SDK-like body through c and closes the body
// as the SDK does when Do returns. When the connection closes before the
// answer is read, it waits for that close first. It returns what it read.
func call(t *testing.T, c aws.HTTPClient, url string, connClosed <-chan struct{}) (int, error) {
	t.Helper()
	payload := []byte(`{"QueueUrl":"q","MaxNumberOfMessages":10}`)
	body := newSDKBody(payload)
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(payload))
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_ = body.Close()
	if connClosed != nil {
		<-connClosed
	}
	got, err := io.ReadAll(resp.Body)
	return len(got), err
}

// The answer arrives whole, on a connection left open, when the request
// body is sent from memory, though the SDK closes its body while net/http
// would still read it. Sent as the SDK hands it over, net/http closes the
// connection under the answer; the test checks that first, so it still
// shows the fault it guards against.
func TestBodyInMemoryKeepsTheAnswerOfABodyClosedEarly(t *testing.T) {
	t.Parallel()
	answer := strings.Repeat("m", 256<<10) // a batch of messages, larger than any read buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			t.Errorf("server: read request: %v", err)
		}
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)

	plain, closed := client(t)
	if n, err := call(t, plain, srv.URL, closed); err == nil {
		t.Fatalf("sent as the SDK hands it over, the answer was read whole (%d bytes): the test no longer shows the fault", n)
	}
	inMemory, closed := client(t)
	n, err := call(t, bodyInMemory{next: inMemory}, srv.URL, nil)
	if err != nil || n != len(answer) {
		t.Errorf("sent from memory: read %d of %d bytes, error %v; want the whole answer", n, len(answer), err)
	}
	select {
	case <-closed:
		t.Error("sent from memory, the connection was closed by the client")
	default:
	}
}
