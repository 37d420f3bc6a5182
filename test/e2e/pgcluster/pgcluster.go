// Package pgcluster runs a private, throwaway PostgreSQL cluster (initdb +
// pg_ctl, trust auth) so a chaos run can crash and restart PostgreSQL
// without touching the server other work uses. As root, the cluster runs as
// the postgres system user, since PostgreSQL refuses root.
//
// The cluster listens on a Unix socket in its own directory and on no TCP
// port: PostgreSQL cannot be handed a listening socket (package listener),
// and a port number chosen for it beforehand could be taken by another
// process before it binds; a socket path no one else knows cannot.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Cluster is one private PostgreSQL cluster.
type Cluster struct {
	bin, dir string
	owner    *user.User // nil: run as the current user
	settings []string   // name=value, after the defaults on the server's command line
}

// Recommended are the checkpoint settings docs/architecture.md#postgresql-settings
// asks of production, for a run of about 200 documents a second: time
// rather than WAL volume starts a checkpoint, so a page is written whole
// to the WAL (a full-page image) once every 15 minutes, not once every
// gigabyte, and those images are compressed. Shared buffers are sized to
// the machine apart (SharedBuffers); the bench keeps PostgreSQL's 128 MB,
// which its recorded figures were measured with.
var Recommended = []string{"max_wal_size=16GB", "checkpoint_timeout=15min", "wal_compression=lz4"}

// SharedBuffers is the shared_buffers setting docs/architecture.md asks
// of production, a quarter of the machine's memory, read from meminfo (the
// text of /proc/meminfo).
func SharedBuffers(meminfo string) (string, error) {
	for line := range strings.Lines(meminfo) {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		total := strings.TrimSpace(rest)
		kb, err := strconv.Atoi(strings.TrimSuffix(total, " kB"))
		if err != nil || kb < 4096 {
			return "", fmt.Errorf("meminfo: MemTotal %q: want 4096 kB or more", total)
		}
		return fmt.Sprintf("shared_buffers=%dMB", kb/1024/4), nil
	}
	return "", errors.New("meminfo: no MemTotal line")
}

// port names the socket file (.s.PGSQL.5432) in the cluster's directory.
const port = 5432

// New initialises a cluster in a new directory under parent, to listen on
// a Unix socket in that directory. fsync is off (a crash of the process, which is what chaos
// does, loses nothing; a crash of the machine would) and synchronous_commit
// stays on, so a committed transaction survives an immediate shutdown.
func New(ctx context.Context, parent string) (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "onceflow-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		if err := c.giveToPostgres(); err != nil {
			return nil, err
		}
	}
	if out, err := c.run(ctx, "initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C"); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return c, nil
}

// DSN is the cluster's superuser connection string for database name.
func (c *Cluster) DSN(name string) string {
	q := url.Values{"host": {c.dir}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}
	return "postgres://postgres@/" + name + "?" + q.Encode()
}

// Socket is the directory of the server's Unix socket.
func (c *Cluster) Socket() string { return c.dir }

// Configure sets server settings (name=value, e.g. fsync=on or
// shared_preload_libraries=pg_stat_statements) for every later Start; they
// override the defaults New describes. A value may not hold spaces or
// quotes.
func (c *Cluster) Configure(settings ...string) error {
	for _, s := range settings {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" || value == "" || strings.ContainsAny(s, " \t\n'\"\\") {
			return fmt.Errorf("pgcluster: setting %q: want name=value without spaces or quotes", s)
		}
	}
	c.settings = append(c.settings, settings...)
	return nil
}

// Start starts the server and waits until it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses='' -c fsync=off -c max_connections=300", port, c.dir)
	for _, s := range c.settings {
		opts += " -c " + s // a later -c wins over an earlier one
	}
	if out, err := c.run(ctx, "pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "postgres.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return nil
}

// Crash stops the server the way a crash would (immediate mode: no
// checkpoint, connections cut), so the next Start runs crash recovery.
func (c *Cluster) Crash(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Remove stops the server if it runs and deletes the cluster.
func (c *Cluster) Remove(ctx context.Context) {
	_, _ = c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
	_ = os.RemoveAll(c.dir)
}

// PID is the running server's postmaster process id (its backends are its
// children); 0 when it is not running.
func (c *Cluster) PID() int {
	b, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(first))
	return pid
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs a PostgreSQL tool, as the postgres user when the cluster has one.
func (c *Cluster) run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, tool)
	cmd := exec.CommandContext(ctx, path, args...)
	if c.owner != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.owner.Username, "--", path}, args...)...)
	}
	cmd.Dir = "/"
	return cmd.CombinedOutput()
}

func (c *Cluster) giveToPostgres() error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root needs the postgres system user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return err
	}
	if err := os.Chown(c.dir, uid, gid); err != nil {
		return err
	}
	c.owner = u
	return nil
}

// binDir finds the newest installed PostgreSQL's binaries.
func binDir() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", errors.New("initdb not found: install Debian's postgresql package (scripts/stack.sh up does)")
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	return filepath.Dir(found[0]), nil
}

func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}
