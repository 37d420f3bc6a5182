package app_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// TestMain runs the suite with stderr, where every logger of the process
// writes (build gives each ingest its logger there), captured, and fails it
// if any test customer's name, fiscal number or email reached a log line.
func TestMain(m *testing.M) {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	stderr := os.Stderr
	os.Stderr = w
	var logs bytes.Buffer
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(&logs, r)
		close(copied)
	}()
	code := m.Run()
	os.Stderr = stderr
	_ = w.Close()
	<-copied
	if leaks := personalDataIn(logs.String()); len(leaks) > 0 {
		fmt.Fprintf(stderr, "FAIL: log output contains personal data: %s\n", strings.Join(leaks, ", "))
		code = 1
	}
	if !strings.Contains(logs.String(), `"msg":"config"`) {
		fmt.Fprintln(stderr, "FAIL: the log check captured no service log line, so it checked nothing")
		code = 1
	}
	if code != 0 {
		tail := logs.Bytes()[max(0, logs.Len()-20000):]
		fmt.Fprintf(stderr, "--- last log lines ---\n%s", tail)
	}
	os.Exit(code)
}

// personalDataIn names the test customers' values found in logs.
func personalDataIn(logs string) []string {
	var found []string
	for _, c := range []customer{ana, acme} {
		for _, field := range []string{"doc_number", "legal_name", "email", "address"} {
			if v := c[field]; v != "" && strings.Contains(logs, v) {
				found = append(found, field+" "+v)
			}
		}
	}
	return found
}
