package logging

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// Lines are buffered and reach stderr, as JSON naming the service, by Sync
// at the latest; a bad level names LOG_LEVEL.
func TestNewWritesJSONToStderrOnSync(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	log, err := New("ingest", "info")
	os.Stderr = saved
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("webhook")
	_ = log.Sync()
	w.Close()
	var out bytes.Buffer
	_, _ = io.Copy(&out, r)
	if !strings.Contains(out.String(), `"logger":"ingest"`) || !strings.Contains(out.String(), `"msg":"webhook"`) || strings.Contains(out.String(), "hidden") {
		t.Fatalf("log output %q", out.String())
	}
	if _, err := New("ingest", "loud"); err == nil || !strings.Contains(err.Error(), "LOG_LEVEL") {
		t.Fatalf("bad level: %v", err)
	}
}
