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
	if got := tuneGC(func(string) string { return "" }); got != gcPercent || debug.SetGCPercent(gcPercent) != gcPercent {
		t.Fatalf("without GOGC the target is %d, want %d", got, gcPercent)
	}
	debug.SetGCPercent(150) // as the runtime would have read GOGC=150
	if got := tuneGC(func(name string) string { return map[string]string{"GOGC": "150"}[name] }); got != 150 || debug.SetGCPercent(150) != 150 {
		t.Fatalf("with GOGC=150 the target is %d, want 150 kept", got)
	}
}
