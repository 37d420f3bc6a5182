package store

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// minDeflated is the shortest body worth deflating: a poller's
// {"id":…,"status":…} is not.
const minDeflated = 128

// deflaters and inflaters keep deflate's state (hundreds of KB for a
// writer) from one receipt to the next.
var (
	deflaters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed) // BestSpeed is a valid level: no error
		return w
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// deflateBody is how a receipt stores body: deflated (true) when that is
// shorter, else as received. PostgreSQL compresses a value only in a row
// over about 2 KB, and a PSP's notification is a few hundred bytes of JSON.
func deflateBody(body []byte) ([]byte, bool) {
	if len(body) < minDeflated {
		return body, false
	}
	var out bytes.Buffer
	out.Grow(len(body) / 2)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(&out)
	if _, err := w.Write(body); err != nil || w.Close() != nil || out.Len() >= len(body) {
		return body, false
	}
	return out.Bytes(), true
}

// inflateBody returns the body a receipt stored, as it was received.
func inflateBody(stored []byte, deflated bool) ([]byte, error) {
	if !deflated {
		return stored, nil
	}
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(stored), nil); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return body, nil
}
