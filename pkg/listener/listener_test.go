package listener_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/pkg/listener"
)

// childEnv makes the test binary a child server on the address it names.
const childEnv = "LISTENER_TEST_CHILD_ADDR"

func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		ln, err := listener.Listen(addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "child %d", os.Getpid())
		}))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// startChild runs the test binary as a server on the socket r holds, then
// lets the child hold the port alone.
func startChild(tb testing.TB, r *listener.Reserved) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Stderr = os.Stderr
	addr, err := r.Pass(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Env = append(os.Environ(), childEnv+"="+addr)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	if err := r.Close(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

func get(tb testing.TB, addr string) string {
	tb.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A reserved port is bound until its child takes it over, the child serves
// on it, a killed child's port refuses connections, and a restart reserves
// and passes the same address again.
func TestPassToAChildAndRestart(t *testing.T) {
	t.Parallel()
	r, err := listener.Reserve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr()
	if _, err := net.Listen("tcp", addr); err == nil {
		t.Fatalf("%s was bound again while reserved", addr)
	}
	first := startChild(t, r)
	if got, want := get(t, addr), fmt.Sprintf("child %d", first.Process.Pid); got != want {
		t.Fatalf("GET %s = %q, want %q", addr, got, want)
	}
	if _, err := net.Listen("tcp", addr); err == nil {
		t.Fatalf("%s was bound again while the child serves on it", addr)
	}

	_ = first.Process.Kill()
	_ = first.Wait()
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("%s accepted a connection after its child was killed", addr)
	}
	again, err := listener.Reserve(addr)
	if err != nil {
		t.Fatalf("reserve %s for a restart: %v", addr, err)
	}
	second := startChild(t, again)
	if got, want := get(t, addr), fmt.Sprintf("child %d", second.Process.Pid); got != want {
		t.Fatalf("after the restart GET %s = %q, want %q", addr, got, want)
	}
}

func TestListen(t *testing.T) {
	t.Parallel()
	ln, err := listener.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	for _, bad := range []string{"fd:x", "fd:1", "fd:999"} {
		if _, err := listener.Listen(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Listen(%q) = %v, want an error naming it", bad, err)
		}
	}
	if !listener.Inherited("fd:3") || listener.Inherited("127.0.0.1:3") {
		t.Error("Inherited misreads an address")
	}
}

// Handoff passes the socket to a server in this process: it serves on the
// reserved address, and once it closes, the port is no longer held.
func TestHandoffInProcess(t *testing.T) {
	t.Parallel()
	r, err := listener.Reserve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr()
	fd, err := r.Handoff()
	if err != nil {
		t.Fatal(err)
	}
	if !listener.Inherited(fd) {
		t.Fatalf("Handoff = %q, want fd:N", fd)
	}
	if _, err := net.Listen("tcp", addr); err == nil {
		t.Fatalf("%s was bound again after the handoff", addr)
	}
	ln, err := listener.Listen(fd)
	if err != nil {
		t.Fatal(err)
	}
	if ln.Addr().String() != addr {
		t.Fatalf("the handed-off listener is on %s, want %s", ln.Addr(), addr)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "here") })}
	go func() { _ = srv.Serve(ln) }()
	if got := get(t, addr); got != "here" {
		t.Fatalf("GET %s = %q", addr, got)
	}
	if !holdsListener(t, addr) {
		t.Fatalf("this process holds no socket listening on %s while serving on it", addr)
	}
	_ = srv.Close()
	if holdsListener(t, addr) {
		t.Fatalf("this process still holds a socket listening on %s after its server closed", addr)
	}
}

// holdsListener reports whether this process holds a socket listening on
// addr's port (from /proc/net/tcp and /proc/self/fd). A dial would not
// tell: once the port is free, another process may bind it and answer.
func holdsListener(t *testing.T, addr string) bool {
	t.Helper()
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	listening := map[string]bool{} // "socket:[inode]" of each socket listening on port
	for line := range strings.SplitSeq(string(table), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
			continue
		}
		_, local, _ := strings.Cut(f[1], ":")
		if p, err := strconv.ParseUint(local, 16, 16); err == nil && p == port {
			listening["socket:["+f[9]+"]"] = true
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && listening[link] {
			return true
		}
	}
	return false
}
