package pgcluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A committed row survives a crash of the server.
func TestCommittedRowSurvivesACrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove(context.Background())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE t (id int); INSERT INTO t VALUES (1)")
	if err := c.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, c.DSN("postgres")); err == nil {
		t.Fatal("connected to a crashed server")
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after crash recovery = %d (%v), want 1", n, err)
	}
}

// A setting given to Configure overrides the cluster's default, and the
// server's PID is its postmaster's.
func TestConfiguredSettingOverridesTheDefault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove(context.Background())
	if err := c.Configure("fsync=on", "shared_preload_libraries=pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var fsync, preload string
	var backend int
	err = conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('shared_preload_libraries'), pg_backend_pid()").Scan(&fsync, &preload, &backend)
	if err != nil {
		t.Fatal(err)
	}
	if fsync != "on" || preload != "pg_stat_statements" {
		t.Errorf("fsync = %q, shared_preload_libraries = %q; want on, pg_stat_statements", fsync, preload)
	}
	if parent := parentPID(t, backend); c.PID() == 0 || parent != c.PID() {
		t.Errorf("PID() = %d, but this connection's backend is a child of %d", c.PID(), parent)
	}
}

func TestConfigureRefusesAMalformedSetting(t *testing.T) {
	t.Parallel()
	c := &Cluster{}
	for _, s := range []string{"fsync", "=on", "fsync=", "work_mem=4 MB", "search_path='x'"} {
		if err := c.Configure(s); err == nil {
			t.Errorf("Configure(%q) accepted", s)
		}
	}
	if len(c.settings) != 0 {
		t.Errorf("refused settings were kept: %v", c.settings)
	}
}

// parentPID reads a process's parent from /proc/<pid>/stat (the field after
// the parenthesised command and the state).
func parentPID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// SharedBuffers gives a quarter of MemTotal in megabytes and names what it
// cannot read.
func TestSharedBuffersIsAQuarterOfMemory(t *testing.T) {
	t.Parallel()
	got, err := SharedBuffers("MemFree:        1000 kB\nMemTotal:       24576000 kB\nSwapTotal: 0 kB\n")
	if err != nil || got != "shared_buffers=6000MB" {
		t.Fatalf("SharedBuffers = %q, %v; want shared_buffers=6000MB", got, err)
	}
	for _, bad := range []string{"", "MemFree: 1000 kB\n", "MemTotal: lots\n", "MemTotal: 0 kB\n"} {
		if got, err := SharedBuffers(bad); err == nil {
			t.Errorf("SharedBuffers(%q) = %q, want an error", bad, got)
		}
	}
}
