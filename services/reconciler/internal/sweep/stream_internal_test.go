package sweep

import (
	"fmt"
	"testing"
	"time"
)

// A pass over a long stretch of history keeps only what its next rows can
// use: once the documents read may be half stale, it drops those created
// before its current rows, and it does not sweep again until it has grown
// as much once more.
func TestStreamForgetsWhatNoLaterRowCanUse(t *testing.T) {
	base := time.Now()
	d := &docStream{valid: map[string]time.Time{}}
	for i := range 3 * streamChunk { // one a millisecond
		d.valid[fmt.Sprint(i)] = base.Add(time.Duration(i) * time.Millisecond)
	}
	d.forget(base.Add(2 * streamChunk * time.Millisecond))
	if len(d.valid) != streamChunk {
		t.Fatalf("%d documents kept, want the %d created from the current rows on", len(d.valid), streamChunk)
	}
	if _, ok := d.valid[fmt.Sprint(2*streamChunk)]; !ok {
		t.Fatal("forgot the first document the current rows can use")
	}
	d.valid["stale"] = base
	d.forget(base.Add(time.Hour))
	if _, ok := d.valid["stale"]; !ok || len(d.valid) != streamChunk+1 {
		t.Fatalf("swept again at %d documents, before growing past %d", len(d.valid), 2*d.kept+streamChunk)
	}
}
