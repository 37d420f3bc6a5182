package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// profiled are the services -profiles takes CPU profiles of.
var profiled = []string{"ingest-1", "relay-1", "invoicer-1"}

// profileFor is how long those profiles run from the burst's first
// payment: the burst of the default 2,000 payments lasts 6–9 s here.
const profileFor = 5 * time.Second

// profile starts a CPU profile and an execution trace of each profiled
// service over the next profileFor, written to dir/<name>.pprof and
// dir/<name>.trace (go tool trace reads it: where goroutines waited, not
// only where CPU went); the returned wait gives the first error once every
// one is written.
func (r *run) profile(ctx context.Context, dir string) (wait func() error) {
	var g errgroup.Group
	for _, name := range profiled {
		for _, p := range []struct{ kind, ext string }{{cpuProfile, ".pprof"}, {executionTrace, ".trace"}} {
			g.Go(func() error {
				return fetchProfile(ctx, r.client, r.s.AdminURL(name), p.kind, profileFor, filepath.Join(dir, name+p.ext))
			})
		}
	}
	return g.Wait
}

// The runtime profiles fetchProfile takes: net/http/pprof's endpoints.
const (
	cpuProfile     = "profile"
	executionTrace = "trace"
)

// maxProfile is the longest CPU profile a service's admin port writes
// before its 30 s write timeout.
const maxProfile = 25 * time.Second

// profileStage starts a CPU profile of the service name over the next d,
// written to sub/name.pprof under -profiles, and nothing without it; the
// returned wait gives its error once it is written.
func (r *run) profileStage(ctx context.Context, sub, name string, d time.Duration) (wait func() error) {
	if r.cfg.Profiles == "" {
		return func() error { return nil }
	}
	dir := filepath.Join(r.cfg.Profiles, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() error { return fmt.Errorf("-profiles: %w", err) }
	}
	done := make(chan error, 1)
	go func() {
		done <- fetchProfile(ctx, r.client, r.s.AdminURL(name), cpuProfile, d, filepath.Join(dir, name+".pprof"))
	}()
	return func() error { return <-done }
}

// fetchProfile asks the service at base for kind (cpuProfile or
// executionTrace) over d (its /debug/pprof/<kind>, behind the admin token)
// and writes it to path.
func fetchProfile(ctx context.Context, client *http.Client, base, kind string, d time.Duration, path string) error {
	url := fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", base, kind, int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+stack.AdminToken)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s of %s: %w", kind, base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s of %s: status %d (%v): %.200s", kind, base, resp.StatusCode, err, body)
	}
	return os.WriteFile(path, body, 0o644)
}

// profileSelf starts a CPU profile of the bench's own process, written to
// sub/name.pprof under -profiles when the returned stop is called, and
// nothing without it: the raw sender's profile, to set beside the relay's.
func (r *run) profileSelf(sub, name string) (stop func() error) {
	if r.cfg.Profiles == "" {
		return func() error { return nil }
	}
	dir := filepath.Join(r.cfg.Profiles, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() error { return fmt.Errorf("-profiles: %w", err) }
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		return func() error { return fmt.Errorf("-profiles: %w", err) }
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return func() error { return errors.Join(fmt.Errorf("-profiles: %w", err), f.Close()) }
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}
}
