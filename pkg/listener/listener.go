// Package listener opens the TCP listeners onceflow's servers serve on, and
// lets a process that starts servers as child processes (the end-to-end
// stack, fauxqs for tests) hand each child a port that stays bound from the
// moment it is chosen.
//
// A harness must know a child's address before the child runs, to give it
// to the others (the PSP sandbox calls ingest, ingest calls the sandbox).
// Listening on 127.0.0.1:0, closing, and handing the number out races: until
// the child binds, the kernel may give the same port to another process, and
// it did (two children of one stack were handed 127.0.0.1:43765). So nothing
// hands out a bare port number: the harness Reserves the port, which keeps
// it bound, and Passes the socket itself to the child as an extra file
// (os/exec's ExtraFiles); the child's address setting then reads "fd:N", and
// Listen turns that descriptor back into its listener. Once the child has
// started, the harness Closes its own copy: while the child runs, it alone
// holds the port, and when it dies the port refuses connections. A restart
// Reserves the same address again before passing it on.
package listener

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// prefix marks an address that names an inherited descriptor.
const prefix = "fd:"

// Inherited reports whether addr names an inherited listening socket
// ("fd:N") rather than a host and port.
func Inherited(addr string) bool { return strings.HasPrefix(addr, prefix) }

// Listen returns a TCP listener for addr. For "fd:N" it is the listening
// socket inherited as file descriptor N, which the listener now owns; for
// anything else ("host:port", port 0 for any free one) a new socket bound to
// addr. Errors name the address.
func Listen(addr string) (net.Listener, error) {
	if !Inherited(addr) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		return ln, nil
	}
	fd, err := strconv.Atoi(strings.TrimPrefix(addr, prefix))
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("listen %s: want fd:N with N an inherited descriptor, 3 or more", addr)
	}
	f := os.NewFile(uintptr(fd), addr)
	defer f.Close() // FileListener holds a copy
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listen %s: not an inherited listening socket: %w", addr, err)
	}
	return ln, nil
}

// Reserved is a bound TCP port waiting to be passed to a child process.
type Reserved struct {
	ln    *net.TCPListener
	files []*os.File
}

// Reserve binds addr ("127.0.0.1:0" for a free loopback port, or an
// address a stopped child held before) and keeps it bound until Close.
func Reserve(addr string) (*Reserved, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("reserve %s: %w", addr, err)
	}
	return &Reserved{ln: ln.(*net.TCPListener)}, nil
}

// Addr is the reserved address, host:port.
func (r *Reserved) Addr() string { return r.ln.Addr().String() }

// Port is the reserved port.
func (r *Reserved) Port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// Pass adds the socket to cmd's extra files and returns the address the
// child must listen on, "fd:N"; call it before cmd.Start and Close after.
func (r *Reserved) Pass(cmd *exec.Cmd) (string, error) {
	f, err := r.ln.File()
	if err != nil {
		return "", fmt.Errorf("pass %s: %w", r.Addr(), err)
	}
	r.files = append(r.files, f)
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	return prefix + strconv.Itoa(2+len(cmd.ExtraFiles)), nil // stdin, stdout, stderr, then the extra files
}

// Handoff is Pass for a server in this same process (a component test
// that starts a service through its environment): it returns "fd:N" for a
// new descriptor of the socket, which the server's Listen takes over, and
// closes r. Until that Listen, the port stays bound.
func (r *Reserved) Handoff() (string, error) {
	rc, err := r.ln.SyscallConn()
	if err != nil {
		return "", fmt.Errorf("hand off %s: %w", r.Addr(), err)
	}
	fd, dupErr := -1, error(nil)
	err = rc.Control(func(s uintptr) {
		syscall.ForkLock.RLock() // no child started meanwhile inherits it
		defer syscall.ForkLock.RUnlock()
		if fd, dupErr = syscall.Dup(int(s)); dupErr == nil {
			syscall.CloseOnExec(fd)
		}
	})
	if err = errors.Join(err, dupErr); err != nil {
		return "", fmt.Errorf("hand off %s: %w", r.Addr(), err)
	}
	return prefix + strconv.Itoa(fd), r.Close()
}

// Close releases this process's hold on the port: a child it was passed
// to keeps its own copy; otherwise the port is free again.
func (r *Reserved) Close() error {
	errs := []error{r.ln.Close()}
	for _, f := range r.files {
		errs = append(errs, f.Close())
	}
	r.files = nil
	return errors.Join(errs...)
}
