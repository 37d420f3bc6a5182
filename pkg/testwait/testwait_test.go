package testwait_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/testwait"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// calling goroutine, as the real one does.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Until with rec in a goroutine of its own (Fatalf ends it).
func run(rec *recorder, timeout time.Duration, cond func() bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		testwait.Until(rec, timeout, time.Millisecond, "the thing", cond)
	}()
	<-done
}

func TestUntil(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	rec := &recorder{TB: t}
	run(rec, time.Minute, func() bool { return calls.Add(1) == 3 })
	if rec.failed != "" || calls.Load() != 3 {
		t.Fatalf("a condition met on the third call: failed %q after %d calls", rec.failed, calls.Load())
	}

	rec = &recorder{TB: t}
	start := time.Now()
	run(rec, 50*time.Millisecond, func() bool { return false })
	if want := "timed out after 50ms waiting for the thing"; rec.failed != want {
		t.Fatalf("never met: failed %q, want %q", rec.failed, want)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before the timeout", waited)
	}
}
