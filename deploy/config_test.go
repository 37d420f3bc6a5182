package deploy_test

import (
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// secretKeys are the keys each workload's Secret (<name>-secrets) must hold;
// deploy/README.md lists them for whoever creates the production ones.
var secretKeys = map[string][]string{
	"ingest":     {"DATABASE_URL", "ADMIN_TOKEN", "INGEST_API_TOKEN", "DLOCAL_LOGIN", "DLOCAL_TRANS_KEY", "DLOCAL_SECRET_KEY", "INGEST_NOTIFICATIONS_KEYS"},
	"relay":      {"DATABASE_URL", "ADMIN_TOKEN", "RELAY_SIGNING_KEY"},
	"invoicer":   {"DATABASE_URL", "ADMIN_TOKEN", "INVOICY_EMP_CODIGO", "INVOICY_EMP_PK", "INVOICY_ACCESS_KEY", "INVOICER_BILLING_KEYS", "INVOICER_PROVIDER_EVENTS_KEYS"},
	"reconciler": {"DATABASE_URL", "RECONCILER_INGEST_ADMIN_TOKEN"},
	"migrate":    {"DATABASE_URL"},
}

// roleOwners are the workloads that connect as their service's own role.
var roleOwners = []string{"ingest", "relay", "invoicer", "reconciler"}

// secretWords mark a setting as secret, as pkg/config's masking does.
var secretWords = []string{"SECRET", "PASSWORD", "TOKEN", "KEY", "KEYS", "PK", "CK"}

// TestSettingsComeFromConfigMapsAndSecrets checks that each workload reads
// its settings from its own ConfigMap and its secrets from its own Secret,
// that no ConfigMap or literal env var carries a secret, and that production
// renders no Secret at all.
func TestSettingsComeFromConfigMapsAndSecrets(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, w := range workloads(r) {
			c := onlyContainer(t, w.name, w.pod.Spec)
			checkEnvSources(t, r, w, c)
			for _, e := range c.Env {
				if e.Value != "" && looksSecret(e.Name) {
					t.Errorf("%s: env %s has a literal value, want a Secret reference", w, e.Name)
				}
			}
		}
		for _, cm := range all[*corev1.ConfigMap](r) {
			for k, v := range cm.Data {
				if looksSecret(k) || k == "DATABASE_URL" || strings.HasSuffix(k, "_DATABASE_URL") || hasPassword(v) {
					t.Errorf("ConfigMap %s holds %s, which belongs in a Secret", cm.Name, k)
				}
			}
		}
		if r.overlay == "production" {
			for _, s := range all[*corev1.Secret](r) {
				t.Errorf("production renders Secret %s: secrets are created outside the repository", s.Name)
			}
		}
	})
}

func checkEnvSources(t *testing.T, r rendered, w workload, c corev1.Container) {
	t.Helper()
	var secret string
	for _, src := range c.EnvFrom {
		switch {
		case src.ConfigMapRef != nil:
			if !strings.HasPrefix(src.ConfigMapRef.Name, w.name+"-config") || named[*corev1.ConfigMap](r, src.ConfigMapRef.Name) == nil {
				t.Errorf("%s: reads ConfigMap %q, want its own rendered %s-config", w, src.ConfigMapRef.Name, w.name)
			}
		case src.SecretRef != nil:
			secret = src.SecretRef.Name
		}
	}
	if !strings.HasPrefix(secret, w.name+"-secrets") {
		t.Errorf("%s: reads Secret %q, want its own %s-secrets", w, secret, w.name)
	}
	if r.overlay == "production" && secret != w.name+"-secrets" {
		t.Errorf("%s: Secret %q, want exactly %s-secrets (created outside the repository)", w, secret, w.name)
	}
}

// TestLocalSecretsConnectEachServiceAsItsOwnRole checks the local overlay's
// throwaway Secrets: every key a workload needs is there, each service's
// DATABASE_URL logs in as its own role (db/roles/roles.sql) on the in-cluster
// postgres, and the migrator sets exactly those passwords.
func TestLocalSecretsConnectEachServiceAsItsOwnRole(t *testing.T) {
	t.Parallel()
	r := render(t, "local")
	data := map[string]map[string]string{}
	for name, keys := range secretKeys {
		s := secretFor(t, r, name)
		if s == nil {
			continue
		}
		data[name] = s
		for _, k := range keys {
			if s[k] == "" {
				t.Errorf("%s-secrets: no %s", name, k)
			}
		}
	}
	for _, name := range roleOwners {
		u, err := url.Parse(data[name]["DATABASE_URL"])
		if err != nil || u.User == nil {
			t.Errorf("%s: DATABASE_URL is not a URL with a user: %v", name, err)
			continue
		}
		pw, _ := u.User.Password()
		if u.User.Username() != "onceflow_"+name || u.Hostname() != "postgres" {
			t.Errorf("%s: DATABASE_URL connects as %s to %s, want onceflow_%s to postgres", name, u.User.Username(), u.Hostname(), name)
		}
		if key := strings.ToUpper(name) + "_DB_PASSWORD"; data["migrate"][key] != pw {
			t.Errorf("migrate-secrets %s does not match the password in %s's DATABASE_URL", key, name)
		}
	}
}

// TestServicesListenWhereProbed checks HTTP_ADDR in each service's ConfigMap
// is the container port the probes and Service use (http), and ADMIN_ADDR
// the container port named admin.
func TestServicesListenWhereProbed(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, name := range services {
			d := named[*appsv1.Deployment](r, name)
			if d == nil {
				t.Fatalf("no Deployment %s", name)
			}
			c := onlyContainer(t, name, d.Spec.Template.Spec)
			for variable, portName := range map[string]string{"HTTP_ADDR": "http", "ADMIN_ADDR": "admin"} {
				addr, _ := envValue(t, r, c, variable)
				_, port, err := net.SplitHostPort(addr)
				if err != nil {
					t.Errorf("%s: %s %q: %v", name, variable, addr, err)
					continue
				}
				if p, _ := strconv.Atoi(port); !hasNamedPort(c, portName, int32(p)) {
					t.Errorf("%s: %s listens on %s, which is not its container port %s", name, variable, port, portName)
				}
			}
		}
	})
}

// TestLocalTalksToTheInClusterNeighbours checks the local overlay points
// every service at the compose-named LocalStack and production at AWS.
func TestLocalTalksToTheInClusterNeighbours(t *testing.T) {
	t.Parallel()
	forEachOverlay(t, func(t *testing.T, r rendered) {
		for _, w := range workloads(r) {
			if w.name == "migrate" {
				continue
			}
			c := onlyContainer(t, w.name, w.pod.Spec)
			endpoint, set := envValue(t, r, c, "AWS_ENDPOINT_URL_SQS")
			switch {
			case r.overlay == "local" && endpoint != "http://localstack:4566":
				t.Errorf("%s: AWS_ENDPOINT_URL_SQS %q, want http://localstack:4566", w, endpoint)
			case r.overlay == "production" && set:
				t.Errorf("%s: AWS_ENDPOINT_URL_SQS %q set in production, want AWS's own endpoint", w, endpoint)
			}
		}
	})
}

// envValue finds key in c's literal env or in the rendered ConfigMaps it
// reads; later sources win, as in Kubernetes.
func envValue(tb testing.TB, r rendered, c corev1.Container, key string) (string, bool) {
	tb.Helper()
	for _, e := range c.Env {
		if e.Name == key && e.ValueFrom == nil {
			return e.Value, true
		}
	}
	value, found := "", false
	for _, src := range c.EnvFrom {
		if src.ConfigMapRef == nil {
			continue
		}
		if cm := named[*corev1.ConfigMap](r, src.ConfigMapRef.Name); cm != nil {
			if v, ok := cm.Data[key]; ok {
				value, found = v, true
			}
		}
	}
	return value, found
}

// secretFor returns the decoded data of the local Secret a workload reads.
func secretFor(tb testing.TB, r rendered, name string) map[string]string {
	tb.Helper()
	for _, s := range all[*corev1.Secret](r) {
		if strings.HasPrefix(s.Name, name+"-secrets") {
			out := map[string]string{}
			for k, v := range s.Data {
				out[k] = string(v)
			}
			for k, v := range s.StringData {
				out[k] = v
			}
			return out
		}
	}
	tb.Errorf("no Secret %s-secrets rendered", name)
	return nil
}

func looksSecret(key string) bool {
	for _, w := range secretWords {
		if strings.HasSuffix(key, "_"+w) || strings.Contains(key, "_"+w+"_") {
			return true
		}
	}
	return false
}

func hasPassword(v string) bool {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return false
	}
	_, has := u.User.Password()
	return has
}

// hasNamedPort reports whether the container's port name is number.
func hasNamedPort(c corev1.Container, name string, number int32) bool {
	for _, p := range c.Ports {
		if p.Name == name && p.ContainerPort == number {
			return true
		}
	}
	return false
}

func metaOf(tb testing.TB, o runtime.Object) metav1.Object {
	tb.Helper()
	m, err := meta.Accessor(o)
	if err != nil {
		tb.Fatalf("%T: %v", o, err)
	}
	return m
}
