package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// The docker-compose.yml contract, checked without Docker: the file is loaded,
// interpolated and validated by compose-go, the library `docker compose` uses.

const localstackImage = "localstack/localstack:4.14.0"

var (
	goServices = []string{"ingest", "relay", "invoicer", "reconciler"}
	sandboxes  = []string{"psp", "fiscal"}
	// Services that must report health, so others can wait on them.
	healthChecked = append(append([]string{"postgres", "localstack", "console"}, goServices...), sandboxes...)
	allServices   = append(slices.Clone(healthChecked), "migrate")
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// loadCompose loads docker-compose.yml with exactly env as the environment
// (nothing from the caller's), as `docker compose config` would.
func loadCompose(t *testing.T, env ...string) *types.Project {
	t.Helper()
	root := repoRoot(t)
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithName("onceflow-test"),
		cli.WithWorkingDirectory(root),
		cli.WithEnv(env),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatalf("compose options: %v", err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load docker-compose.yml: %v", err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.Services[name]
	if !ok {
		t.Fatalf("service %q is missing from docker-compose.yml", name)
	}
	return s
}

// entrypoint returns the binary path of the Dockerfile's exec-form ENTRYPOINT.
func entrypoint(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ENTRYPOINT\s+\["([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal(`Dockerfile has no exec-form ENTRYPOINT ["/path"]`)
	}
	return string(m[1])
}

func TestComposeServicesExist(t *testing.T) {
	p := loadCompose(t)
	for _, name := range allServices {
		t.Run(name, func(t *testing.T) { service(t, p, name) })
	}
}

func TestComposeHealthchecks(t *testing.T) {
	p := loadCompose(t)
	bin := entrypoint(t)
	for _, name := range healthChecked {
		t.Run(name, func(t *testing.T) {
			hc := service(t, p, name).HealthCheck
			if hc == nil || hc.Disable || len(hc.Test) < 2 {
				t.Fatalf("service %q has no healthcheck", name)
			}
			if slices.Contains(goServices, name) || slices.Contains(sandboxes, name) || name == "console" {
				want := []string{"CMD", bin, "healthcheck"}
				if !slices.Equal([]string(hc.Test), want) {
					t.Errorf("service %q healthcheck = %q, want %q (the image's ENTRYPOINT binary)", name, hc.Test, want)
				}
			}
		})
	}
}

func TestComposeLocalstack(t *testing.T) {
	p := loadCompose(t)
	s := service(t, p, "localstack")
	if s.Image != localstackImage {
		t.Errorf("service localstack image = %q, want %q", s.Image, localstackImage)
	}
	if s.HealthCheck == nil || !strings.Contains(strings.Join(s.HealthCheck.Test, " "), "/_localstack/init/ready") {
		t.Errorf("service localstack healthcheck must query /_localstack/init/ready, got %+v", s.HealthCheck)
	}
	if s.Environment["SERVICES"] == nil || !strings.Contains(*s.Environment["SERVICES"], "sqs") {
		t.Errorf("service localstack must enable sqs in SERVICES")
	}
	mounted := false
	for _, v := range s.Volumes {
		if v.Target == "/etc/localstack/init/ready.d" && strings.HasSuffix(filepath.ToSlash(v.Source), "localstack/init/ready.d") {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("service localstack must mount ./localstack/init/ready.d at /etc/localstack/init/ready.d")
	}
}

func TestComposeLocalstackAuthTokenPassedThrough(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"unset", nil, ""},
		{"set", []string{"LOCALSTACK_AUTH_TOKEN=ls-token-123"}, "ls-token-123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := service(t, loadCompose(t, tc.env...), "localstack")
			got, ok := s.Environment["LOCALSTACK_AUTH_TOKEN"]
			if !ok {
				t.Fatal("service localstack does not pass LOCALSTACK_AUTH_TOKEN through")
			}
			if v := deref(got); v != tc.want {
				t.Errorf("service localstack LOCALSTACK_AUTH_TOKEN = %q, want %q", v, tc.want)
			}
		})
	}
}

func TestComposeDependencies(t *testing.T) {
	p := loadCompose(t)
	want := map[string]string{
		"postgres":   types.ServiceConditionHealthy,
		"localstack": types.ServiceConditionHealthy,
		"migrate":    types.ServiceConditionCompletedSuccessfully,
	}
	extra := map[string]map[string]string{
		"ingest":   {"psp": types.ServiceConditionHealthy},
		"invoicer": {"fiscal": types.ServiceConditionHealthy},
	}
	for _, name := range goServices {
		t.Run(name, func(t *testing.T) {
			deps := service(t, p, name).DependsOn
			check := func(dep, cond string) {
				d, ok := deps[dep]
				if !ok {
					t.Errorf("service %q does not depend on %q", name, dep)
					return
				}
				if d.Condition != cond {
					t.Errorf("service %q depends on %q with condition %q, want %q", name, dep, d.Condition, cond)
				}
			}
			for dep, cond := range want {
				check(dep, cond)
			}
			for dep, cond := range extra[name] {
				check(dep, cond)
			}
		})
	}
	t.Run("migrate", func(t *testing.T) {
		s := service(t, p, "migrate")
		if d, ok := s.DependsOn["postgres"]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("service migrate must wait for postgres healthy, got %+v", s.DependsOn)
		}
		if s.Restart != "no" {
			t.Errorf("service migrate restart = %q, want \"no\" (it is one-shot)", s.Restart)
		}
	})
}

// The console starts once the four services answer: it has no database and
// reaches them only through their admin APIs.
func TestComposeConsoleWaitsForTheServices(t *testing.T) {
	deps := service(t, loadCompose(t), "console").DependsOn
	for _, name := range goServices {
		if d, ok := deps[name]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("service console must wait for %s healthy, got %+v", name, deps[name])
		}
	}
	for _, db := range []string{"postgres", "migrate"} {
		if _, ok := deps[db]; ok {
			t.Errorf("service console depends on %s, but has no database", db)
		}
	}
}

func TestComposeDependsOnTargetsExist(t *testing.T) {
	p := loadCompose(t)
	for name, s := range p.Services {
		t.Run(name, func(t *testing.T) {
			for dep := range s.DependsOn {
				if _, ok := p.Services[dep]; !ok {
					t.Errorf("service %q depends on %q, which does not exist", name, dep)
				}
			}
		})
	}
}

func TestComposeBuilds(t *testing.T) {
	p := loadCompose(t)
	root := repoRoot(t)
	for name, s := range p.Services {
		if s.Build == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			if filepath.Clean(s.Build.Context) != root {
				t.Errorf("service %q build context = %q, want the repository root %q", name, s.Build.Context, root)
			}
			if df := s.Build.Dockerfile; df != "Dockerfile" && df != filepath.Join(root, "Dockerfile") {
				t.Errorf("service %q builds with %q, want the repository's Dockerfile", name, df)
			}
			cmd := deref(s.Build.Args["CMD"])
			if cmd == "" {
				t.Fatalf("service %q build has no CMD arg", name)
			}
			if fi, err := os.Stat(filepath.Join(root, cmd)); err != nil || !fi.IsDir() {
				t.Errorf("service %q build arg CMD=%q: no such directory in the repository", name, cmd)
			}
		})
	}
	for _, name := range append(append([]string{"migrate"}, goServices...), sandboxes...) {
		if service(t, p, name).Build == nil {
			t.Errorf("service %q has no build section", name)
		}
	}
}

func TestComposeIngestPublished(t *testing.T) {
	s := service(t, loadCompose(t), "ingest")
	for _, port := range s.Ports {
		if port.Target == 8080 && port.Published == "8080" {
			return
		}
	}
	t.Errorf("service ingest must publish port 8080 on the host, got %+v", s.Ports)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Each service's admin port (ADMIN_ADDR) is published on the host's
// loopback only, where onceflowctl looks by default, and nowhere else.
func TestComposeAdminPortsOnLoopback(t *testing.T) {
	p := loadCompose(t)
	for name, published := range map[string]string{"ingest": "9090", "relay": "9091", "invoicer": "9092", "reconciler": "9093"} {
		s := service(t, p, name)
		if addr := deref(s.Environment["ADMIN_ADDR"]); addr != ":9090" {
			t.Errorf("service %s: ADMIN_ADDR %q, want :9090", name, addr)
		}
		found := false
		for _, port := range s.Ports {
			if port.Target == 9090 {
				found = port.Published == published && port.HostIP == "127.0.0.1"
			}
		}
		if !found {
			t.Errorf("service %s must publish its admin port 9090 as 127.0.0.1:%s, got %+v", name, published, s.Ports)
		}
	}
}
