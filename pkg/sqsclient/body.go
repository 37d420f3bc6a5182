package sqsclient

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// bodyInMemory is the SDK's HTTP client with each request's body read into
// memory before it is sent, so net/http sends a copy it owns.
//
// The SDK hands net/http a body of its own type and closes it as soon as
// the response headers arrive. net/http, not knowing that type, writes the
// headers and body straight to the socket, then reads the body once more
// to check that nothing is left over; when the server answered first (a
// busy machine: the writer goroutine waits for a CPU) that second read
// finds the body closed, which the SDK's body reports as io.EOF, and
// net/http closes the connection under the answer being read. The SDK
// then sends the call again: for a ReceiveMessage, the messages of the
// lost answer stay hidden for the visibility timeout (the bench's 30 s
// stragglers, dozens of such closes in a 10 s burst). A body in memory is
// written with the headers, never read after the call, and can be sent
// again on a fresh connection by net/http itself. SQS requests are small
// (at most 1 MiB for a batch), so the copy costs little.
type bodyInMemory struct{ next aws.HTTPClient }

// Do implements aws.HTTPClient.
func (c bodyInMemory) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return c.next.Do(req)
	}
	body, err := readBody(req)
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	out := req.WithContext(req.Context())
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.Body, _ = out.GetBody()
	return c.next.Do(out)
}

// readBody reads req's body into one buffer of its declared length (the
// SDK declares it), rather than growing one from 512 bytes.
func readBody(req *http.Request) ([]byte, error) {
	if req.ContentLength <= 0 {
		return io.ReadAll(req.Body)
	}
	var buf bytes.Buffer
	buf.Grow(int(req.ContentLength) + bytes.MinRead)
	_, err := buf.ReadFrom(req.Body)
	return buf.Bytes(), err
}
