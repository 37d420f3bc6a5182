// Package simtest holds what the PSP sandboxes' tests share.
package simtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Post sends body as JSON to url, fails tb unless the answer is 200, and
// returns the answer's body.
func Post(tb testing.TB, url string, body any) []byte {
	tb.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		tb.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("POST %s: %d %s", url, resp.StatusCode, out)
	}
	return out
}
