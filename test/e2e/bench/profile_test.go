package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/httpserver"
	"github.com/onceflow/onceflow/test/e2e/stack"
)

func TestFetchProfileWritesTheServicesProfile(t *testing.T) {
	t.Parallel()
	serve := func(token string) string {
		s := httpserver.New(zap.NewNop(), httpserver.Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
		s.Profiling(token)
		ts := httptest.NewServer(s.AdminEcho())
		t.Cleanup(ts.Close)
		return ts.URL
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "svc.pprof")
	if err := fetchProfile(context.Background(), http.DefaultClient, serve(stack.AdminToken), cpuProfile, time.Second, path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("profile file: %.20q (%v), want a gzipped profile", b, err)
	}
	trace := filepath.Join(dir, "svc.trace")
	if err := fetchProfile(context.Background(), http.DefaultClient, serve(stack.AdminToken), executionTrace, time.Second, trace); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(trace); err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("trace file: %.20q (%v), want an execution trace (\"go 1.NN trace\")", b, err)
	}

	err := fetchProfile(context.Background(), http.DefaultClient, serve("another-token"), cpuProfile, time.Second, path+".2")
	if err == nil || !strings.Contains(err.Error(), "status 401") {
		t.Fatalf("error %v, want the service's 401 named", err)
	}
	if _, err := os.Stat(path + ".2"); !os.IsNotExist(err) {
		t.Fatalf("a refused profile left a file (%v)", err)
	}
}
