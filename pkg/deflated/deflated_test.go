package deflated

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
)

// A value comes back as given whether Pack deflated it (repetitive JSON),
// or kept it (short, or random bytes deflate cannot shrink); a deflated one
// is shorter.
func TestPackUnpackRoundTrips(t *testing.T) {
	t.Parallel()
	random := make([]byte, 600)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	json := []byte(`{"id":"D-4-1","status":"PAID","status_detail":"The payment was paid.",` + strings.Repeat(`"k":"value",`, 20) + `"end":1}`)
	for _, c := range []struct {
		name     string
		value    []byte
		deflated bool
	}{{"json", json, true}, {"short", []byte(`{"id":"x","status":"PAID"}`), false}, {"random", random, false}, {"empty", nil, false}} {
		stored, ok := Pack(c.value)
		if ok != c.deflated {
			t.Errorf("%s: deflated %v, want %v", c.name, ok, c.deflated)
		}
		if ok && len(stored) >= len(c.value) {
			t.Errorf("%s: stored %d bytes deflated, from %d", c.name, len(stored), len(c.value))
		}
		got, err := Unpack(stored, ok)
		if err != nil || !bytes.Equal(got, c.value) {
			t.Errorf("%s: unpacked %q (%v), want %q", c.name, got, err, c.value)
		}
	}
	if _, err := Unpack([]byte("not deflate"), true); err == nil {
		t.Error("unpacking bytes that are not deflate: no error")
	}
}
