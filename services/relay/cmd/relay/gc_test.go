package main

import (
	"runtime/debug"
	"testing"
)

// The relay collects at gcPercent unless GOGC says otherwise, in which case
// the runtime's reading of it stands.
func TestTuneGCSetsTheRelaysTargetUnlessGOGCIsSet(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(gcPercent); got != gcPercent {
		t.Fatalf("without GOGC the target is %d, want %d", got, gcPercent)
	}
	debug.SetGCPercent(150) // as the runtime would have read GOGC=150
	tuneGC(func(name string) string { return map[string]string{"GOGC": "150"}[name] })
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("with GOGC=150 the target is %d, want 150 kept", got)
	}
}
