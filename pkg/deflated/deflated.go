// Package deflated stores short values (a webhook's body) deflated when
// that makes them shorter: PostgreSQL compresses a value only in a row over
// about 2 KB, and a PSP's notification is a few hundred bytes of JSON.
package deflated

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// minDeflated is the shortest value worth deflating: a poller's
// {"id":…,"status":…} is not.
const minDeflated = 128

// deflaters and inflaters keep deflate's state (hundreds of KB for a
// writer) from one value to the next.
var (
	deflaters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed) // BestSpeed is a valid level: no error
		return w
	}}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// Pack returns value as it is stored: deflated (true) when that is shorter,
// else as given.
func Pack(value []byte) ([]byte, bool) {
	if len(value) < minDeflated {
		return value, false
	}
	var out bytes.Buffer
	out.Grow(len(value) / 2)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.Reset(&out)
	if _, err := w.Write(value); err != nil || w.Close() != nil || out.Len() >= len(value) {
		return value, false
	}
	return out.Bytes(), true
}

// Unpack returns the value Pack stored, as it was given.
func Unpack(stored []byte, deflated bool) ([]byte, error) {
	if !deflated {
		return stored, nil
	}
	r := inflaters.Get().(io.ReadCloser)
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(stored), nil); err != nil {
		return nil, err
	}
	value, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return value, nil
}
