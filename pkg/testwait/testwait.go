// Package testwait is the tests' one "eventually": it polls a condition
// that another goroutine or process makes true, up to a deadline. Only test
// code imports it (by convention; it imports package testing).
package testwait

import (
	"testing"
	"time"
)

// Until calls cond every interval until it returns true, and fails tb with
// "timed out after <timeout> waiting for <what>" once timeout has passed
// without it. cond is called at least once.
func Until(tb testing.TB, timeout, every time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(every)
	}
}
